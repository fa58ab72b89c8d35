/**
 * The wake-up scenario of daemon-wake.test.ts, written against a runtime
 * module passed in, so that daemon-idle-mutants.test.ts runs it against a
 * runtime that ignores the backend's change notification.
 */
import type { Backend } from '@agent-state/core'
import type { BackendFixture } from './backends.js'
import type { Runtime } from './daemon-idle-scenarios.js'
import { sleep } from './queue-helpers.js'

/**
 * How long a notified waiter may take in the tests: far below the 60 s poll
 * interval, and twice the backends' largest `maxDelayMs` (500 ms) plus the
 * contract's 2 s margin for a loaded host.
 */
export const WAKE_WINDOW_MS = 5000

/** A poll interval no test waits for: only a notification can end these waits in time. */
export const NEVER_POLL = { pollMinMs: 60_000, pollMaxMs: 60_000 } as const

/**
 * `inner`, plus a way to learn when its next completed `get` of a key
 * matching a pattern has returned (so a test knows a waiter has read the
 * state it then waits on). Everything else, `watch` included, is `inner`'s.
 */
export function withReadProbe(inner: Backend) {
  const probes: { pattern: RegExp; resolve: () => void }[] = []
  const get = async (key: string) => {
    const found = await inner.get(key)
    for (const probe of [...probes]) {
      if (probe.pattern.test(key)) {
        probes.splice(probes.indexOf(probe), 1)
        probe.resolve()
      }
    }
    return found
  }
  const backend = new Proxy(inner, {
    get(target, property) {
      if (property === 'get') return get
      const value = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return {
    backend,
    /** Resolves once a `get` of a key matching `pattern`, started from now on, has returned. */
    nextRead(pattern: RegExp): Promise<void> {
      return new Promise((resolve) => probes.push({ pattern, resolve }))
    },
  }
}

/** The value of `promise` if it settles within `ms` (a rejection counts, as its code), else `'still waiting'`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | string> {
  const settled = promise.then(
    (value) => value,
    (error: unknown) => `rejected: ${(error as { code?: string }).code ?? String(error)}`,
  )
  return Promise.race([settled, sleep(Math.max(0, ms)).then(() => 'still waiting')])
}

/**
 * Two waiters on three backend instances, each waiting with a 60 s poll
 * interval after it has read the state it waits on: a daemon's `next({
 * waitMs })` on instance X, `waitForIdle` of another daemon on instance Y.
 * Instance Z then triggers the first daemon, and triggers, claims and
 * acknowledges an event of the second. No in-process signal crosses
 * instances, so within `windowMs` (far below the poll interval) only the
 * backend's change notification can wake either waiter.
 */
export async function wakeOnNotification(rt: Runtime, fixture: BackendFixture, windowMs: number) {
  const x = withReadProbe(fixture.create())
  const y = withReadProbe(fixture.create())
  const z = fixture.create()
  const daemon = await rt.spawnDaemon(x.backend, { daemonId: 'woken' })
  const watched = await rt.createDaemonQueue(z, 'watched')
  const aborts = new AbortController()

  const idleRead = y.nextRead(/^workers\/watched\//)
  const idle = rt.waitForIdle(y.backend, 'watched', {
    minIterations: 1,
    timeoutMs: 120_000,
    ...NEVER_POLL,
  })
  await idleRead
  const claimRead = x.nextRead(/^daemons\/woken\/tail\.json$/)
  const turn = daemon.next({ waitMs: 120_000, ...NEVER_POLL, signal: aborts.signal })
  await claimRead

  const started = Date.now()
  await (await rt.openDaemonQueue(z, 'woken')).trigger({ id: 'e1' })
  await watched.trigger({ id: 'w1' })
  const delivery = await watched.claim()
  await delivery?.ack()
  const [delivered, idled] = await Promise.all([
    within(turn, windowMs - (Date.now() - started)),
    within(idle, windowMs - (Date.now() - started)),
  ])
  // End whatever still waits (a broken runtime): the abort, and the stop of the watched daemon's
  // waiter through the fixture's cleanup (a closed backend ends its watch and its wait).
  aborts.abort()
  return {
    claimsNotification: x.backend.capabilities.changeNotification !== undefined,
    delivered:
      typeof delivered === 'string' || delivered === null
        ? delivered
        : { seq: delivered.seq, event: delivered.event },
    idled: typeof idled === 'string' ? idled : { totalIterations: idled.totalIterations },
  }
}
