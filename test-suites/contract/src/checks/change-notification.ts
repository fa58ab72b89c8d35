import { AssertionError } from 'node:assert'
import {
  type Backend,
  type Capabilities,
  type ChangeHint,
  type ChangeNotificationCapability,
  isAgentStateError,
  watchInterruptOf,
} from '@agent-state/core'
import { bytes, ensure, ensureEqual, fail, text } from '../assert.js'
import { type ContractCheck, check, notApplicable, notClaimed } from '../check.js'
import type { ContractChild } from '../child-process.js'
import type { WatchReleased } from '../child-protocol.js'
import { type Harness, probedInterruptSeam, sleep } from '../harness.js'
import type { ContractOptions } from '../types.js'
import { listAll } from './list-all.js'

/** Skip reason of the tier: only a capability that is not claimed. */
export function changeNotificationSkip(caps: Capabilities): string | undefined {
  return caps.changeNotification === undefined ? notClaimed('changeNotification') : undefined
}

function claim(h: Harness): ChangeNotificationCapability {
  const claimed = h.capabilities.changeNotification
  if (claimed === undefined) fail('changeNotification is not claimed')
  ensure(
    (claimed.mode === 'push' || claimed.mode === 'poll') &&
      Number.isFinite(claimed.maxDelayMs) &&
      claimed.maxDelayMs > 0,
    `changeNotification must be { mode: 'push' | 'poll', maxDelayMs > 0 }, got ${JSON.stringify(claimed)}`,
  )
  return claimed
}

/** How long after an acknowledgement a hint may arrive: the claim plus the loaded-host margin. */
function allowedDelayMs(h: Harness): number {
  return claim(h).maxDelayMs + h.scale.watchMarginMs
}

function watchOf(b: Backend): NonNullable<Backend['watch']> {
  if (typeof b.watch !== 'function') {
    fail('the backend claims changeNotification but has no watch method')
  }
  return b.watch.bind(b)
}

interface SeenHint {
  readonly hint: ChangeHint
  readonly at: number
}

/**
 * A watcher as a consumer writes one: it takes hints and, with `reread`,
 * re-reads what each names (a key, or every key under a prefix on a
 * `prefix` or `resync` hint), keeping the value it last read per key.
 */
class Watcher {
  readonly hints: SeenHint[] = []
  /** Last value read per key (`null`: absent), with `reread`. */
  readonly view = new Map<string, string | null>()
  readonly #controller = new AbortController()
  readonly #done: Promise<void>
  #error: unknown
  #waiters: Array<() => void> = []

  constructor(
    readonly backend: Backend,
    readonly prefix: string,
    reread: boolean,
  ) {
    const iterable = watchOf(backend)(prefix, { signal: this.#controller.signal })
    this.#done = (async () => {
      try {
        for await (const hint of iterable) {
          this.hints.push({ hint, at: performance.now() })
          if (reread) await this.#reread(hint)
          this.#wake()
        }
      } catch (error) {
        this.#error = error
      }
      this.#wake()
    })()
  }

  async #reread(hint: ChangeHint): Promise<void> {
    if (hint.kind === 'key') {
      const got = await this.backend.get(hint.key)
      this.view.set(hint.key, got === null ? null : text(got.value))
      return
    }
    const under = hint.kind === 'prefix' ? hint.prefix : this.prefix
    const listed = new Set(await listAll(this.backend, { prefix: under }))
    for (const key of this.view.keys()) if (key.startsWith(under)) this.view.set(key, null)
    for (const key of listed) {
      const got = await this.backend.get(key)
      this.view.set(key, got === null ? null : text(got.value))
    }
  }

  #wake(): void {
    const waiters = this.#waiters
    this.#waiters = []
    for (const wake of waiters) wake()
  }

  /** Fails if the watch failed. */
  ensureHealthy(): void {
    if (this.#error !== undefined) {
      fail(`the watch failed: ${this.#error instanceof Error ? this.#error.message : this.#error}`)
    }
  }

  /** Waits until `predicate` holds (checked after every hint) or `timeoutMs` pass; resolves whether it held. */
  async until(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
    const deadline = performance.now() + timeoutMs
    for (;;) {
      this.ensureHealthy()
      if (predicate()) return true
      const left = deadline - performance.now()
      if (left <= 0) return false
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 50))
        this.#waiters.push(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    }
  }

  /** Waits for the first hint (the watch is established when it arrives) and checks it is `resync`. */
  async established(timeoutMs: number): Promise<void> {
    const got = await this.until(() => this.hints.length > 0, timeoutMs)
    ensure(got, `no first hint within ${timeoutMs} ms of watch(${JSON.stringify(this.prefix)})`)
    ensureEqual(this.hints[0]?.hint.kind, 'resync', 'the first hint of a watch')
  }

  /** Aborts the watch and waits for its iteration to end. */
  async stop(): Promise<void> {
    this.#controller.abort()
    await this.#done
  }
}

/** Whether `hint` covers `key`: names it, a prefix of it, or is a resync. */
function covers(hint: ChangeHint, key: string): boolean {
  if (hint.kind === 'resync') return true
  return hint.kind === 'key' ? hint.key === key : key.startsWith(hint.prefix)
}

/** A writer in another process (when `multiProcess` is claimed) or another instance. */
interface Writer {
  put(key: string, value: string): Promise<void>
  burst(keys: readonly string[], writes: number, tag: string): Promise<void>
}

async function writers(h: Harness, count: number): Promise<Writer[]> {
  if (h.capabilities.multiProcess) {
    const children = await Promise.all(Array.from({ length: count }, () => h.child()))
    h.report({ writerProcesses: children.length })
    return children.map((c: ContractChild) => ({
      async put(key, value) {
        await c.request({ type: 'put-many', keys: [key], value })
      },
      async burst(keys, writes, tag) {
        await c.request({ type: 'burst', keys, writes, tag })
      },
    }))
  }
  const instances = await Promise.all(
    Array.from({ length: count }, () => h.backend({ realClock: true })),
  )
  h.report({ writerInstances: instances.length })
  return instances.map((b) => ({
    async put(key, value) {
      await b.put(key, bytes(value))
    },
    async burst(keys, writes, tag) {
      for (let i = 0; i < writes; i++) {
        const key = keys[i % keys.length] as string
        if (i % 7 === 6) await b.delete(key)
        else await b.put(key, bytes(`${tag}:${i}`))
        // In one process, let the watchers run between writes as they would across processes.
        if (i % 16 === 15) await new Promise((resolve) => setImmediate(resolve))
      }
    },
  }))
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
}

/** Keys that share bytes with `a/` without being under it. */
const OUTSIDE = ['ab', 'b/x', 'a', 'b/a/x', 'a0/x', 'a.', 'A/x']

/** Skip reason of the interrupt check when the suite has no way to break a watch's channel. */
export const NO_INTERRUPT =
  'resync after a lost channel is untested: the suite was given no watchInterrupt and the instance has no WATCH_INTERRUPT seam'

const TIMEOUT = 180_000

/** `promise`, or a contract failure naming `what` once `ms` have passed. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new AssertionError({ message: `${what}: nothing within ${ms} ms` })),
      ms,
    )
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}
const skip = { skip: changeNotificationSkip, timeoutMs: TIMEOUT }

/** The change-notification tier: what `watch` promises, proved on the claimed delay. */
export const changeNotificationChecks: ContractCheck[] = [
  check(
    'change-notification',
    'a watch opened without options starts with resync hints a write and ends at close',
    async (h) => {
      const allowed = allowedDelayMs(h)
      const b = await h.backend({ realClock: true })
      // `options` is optional in the signature: a watch that needs it fails callers that omit it.
      let iterator: AsyncIterator<ChangeHint>
      try {
        iterator = watchOf(b)('bare/')[Symbol.asyncIterator]()
      } catch (error) {
        fail(`watch('bare/') without options threw: ${String(error)}`)
      }
      const next = async (what: string) => {
        try {
          return await within(iterator.next(), allowed, what)
        } catch (error) {
          if (error instanceof AssertionError) throw error
          fail(`${what}: the watch opened without options failed: ${String(error)}`)
        }
      }
      const first = await next('the first hint')
      ensure(
        first.done !== true && first.value.kind === 'resync',
        `the first hint of a watch opened without options is resync, got ${JSON.stringify(first)}`,
      )
      await b.put('bare/k', bytes('v'))
      let covered = false
      while (!covered) {
        const hint = await next('a hint of the write to bare/k')
        ensure(hint.done !== true, 'the watch ended before hinting the write to bare/k')
        covered =
          hint.value.kind === 'resync' ||
          (hint.value.kind === 'key' && hint.value.key === 'bare/k') ||
          (hint.value.kind === 'prefix' && 'bare/k'.startsWith(hint.value.prefix))
      }
      await b.close()
      // Hints already pending may still come; then the iteration ends.
      for (let pending = 0; ; pending++) {
        ensure(pending < 100, 'the watch opened without options kept hinting after close')
        if ((await next('the end of the watch after close')).done === true) break
      }
    },
    skip,
  ),

  check(
    'change-notification',
    'the instance or the suite declares how a watch channel can be cut',
    async (h) => {
      // Checked on a created instance, not only at collection: the resync check's skip reads
      // the probe, and a declaration lost on the way (core carrying a store's seam over) would
      // otherwise only turn that check into a skip.
      const b = await h.backend()
      const seam = watchInterruptOf(b)
      if (h.watchInterrupt === undefined && seam === undefined) {
        fail(
          'the backend claims changeNotification, but neither the suite options (watchInterrupt) nor the instance (WATCH_INTERRUPT seam) say how its watch channel can be cut or why it cannot: the resync-after-a-lost-channel rule would go unproved',
        )
      }
    },
    skip,
  ),

  check(
    'change-notification',
    'watch starts with resync and rejects an invalid prefix and a closed backend',
    async (h) => {
      const b = await h.backend({ realClock: true })
      const watcher = new Watcher(b, 'w/', false)
      await watcher.established(allowedDelayMs(h))
      await watcher.stop()
      const bad = watchOf(b)('bad\uD800', {})[Symbol.asyncIterator]()
      let code: string | undefined
      try {
        await bad.next()
      } catch (error) {
        code = isAgentStateError(error) ? error.code : String(error)
      }
      ensureEqual(code, 'INVALID_ARGUMENT', 'first next() of a watch on a lone-surrogate prefix')
      const closed = await h.backend({ realClock: true })
      await closed.close()
      code = undefined
      try {
        await watchOf(closed)('w/', {})[Symbol.asyncIterator]().next()
      } catch (error) {
        code = isAgentStateError(error) ? error.code : String(error)
      }
      ensureEqual(code, 'CLOSED', 'first next() of a watch on a closed backend')
    },
    skip,
  ),

  check(
    'change-notification',
    'a write by another process is hinted within the claimed delay',
    async (h) => {
      const allowed = allowedDelayMs(h)
      const [writer] = await writers(h, 1)
      if (writer === undefined) fail('no writer')
      const watcher = new Watcher(await h.backend({ realClock: true }), 'lat/', false)
      await watcher.established(allowed)
      const rounds = h.scale.watchDelayWrites
      ensure(
        rounds > 0,
        'the delay check needs at least one write (AGENT_STATE_WATCH_DELAY_WRITES)',
      )
      const delays: number[] = []
      for (let i = 0; i < rounds; i++) {
        const key = `lat/k${i}`
        const from = watcher.hints.length
        await writer.put(key, `v${i}`)
        const acked = performance.now()
        const mine = () => watcher.hints.slice(from).find((s) => covers(s.hint, key))
        const hinted = await watcher.until(() => mine() !== undefined, allowed)
        if (!hinted) {
          fail(
            `write ${i} (${key}) not hinted within ${allowed} ms of its acknowledgement (claimed ${claim(h).maxDelayMs} ms + margin ${h.scale.watchMarginMs} ms)`,
          )
        }
        delays.push(Math.max(0, (mine()?.at ?? acked) - acked))
      }
      await watcher.stop()
      delays.sort((a, b) => a - b)
      ensureEqual(delays.length, rounds, 'timed writes')
      h.report({
        timedWrites: delays.length,
        p50DelayMs: Math.round(percentile(delays, 50)),
        maxDelayMs: Math.round(delays[delays.length - 1] ?? 0),
      })
    },
    skip,
  ),

  check(
    'change-notification',
    "a watch opened as the instance's previous watch ends still starts and is hinted",
    async (h) => {
      // A backend that opens its channel with the first watch and closes it with the last must
      // give a watch opened in between a working channel, whether the previous watch ended while
      // its channel was still opening (never iterated) or once it was established.
      const allowed = allowedDelayMs(h)
      const [writer] = await writers(h, 1)
      if (writer === undefined) fail('no writer')
      const b = await h.backend({ realClock: true })
      for (const previous of ['ended while opening', 'ended once established'] as const) {
        if (previous === 'ended while opening') {
          const abandoned = new AbortController()
          watchOf(b)('again/', { signal: abandoned.signal })
          abandoned.abort()
        } else {
          const earlier = new Watcher(b, 'again/', false)
          await earlier.established(allowed)
          await earlier.stop()
        }
        const watcher = new Watcher(b, 'again/', false)
        try {
          await watcher.established(allowed)
        } catch (error) {
          fail(`a watch opened as the previous one ${previous} did not start: ${String(error)}`)
        }
        const key = `again/${previous === 'ended while opening' ? 'opening' : 'established'}`
        const from = watcher.hints.length
        await writer.put(key, 'v')
        const hinted = await watcher.until(
          () => watcher.hints.slice(from).some((s) => covers(s.hint, key)),
          allowed,
        )
        await watcher.stop()
        ensure(
          hinted,
          `a watch opened as the previous one ${previous} was not hinted of ${key} within ${allowed} ms`,
        )
      }
    },
    skip,
  ),

  check(
    'change-notification',
    'a watcher on a/ gets nothing for ab or b/x',
    async (h) => {
      const allowed = allowedDelayMs(h)
      const [writer] = await writers(h, 1)
      if (writer === undefined) fail('no writer')
      const watcher = new Watcher(await h.backend({ realClock: true }), 'a/', false)
      const everything = new Watcher(await h.backend({ realClock: true }), '', false)
      await watcher.established(allowed)
      await everything.established(allowed)
      for (const key of OUTSIDE) await writer.put(key, 'outside')
      // The wide watcher proves the outside writes were announced before the narrow one is judged.
      const announced = await everything.until(
        () => OUTSIDE.every((k) => everything.hints.slice(1).some((s) => covers(s.hint, k))),
        allowed,
      )
      ensure(
        announced,
        `a watcher on "" was not hinted of every outside write within ${allowed} ms`,
      )
      await sleep(Math.min(allowed, claim(h).maxDelayMs * 2 + 200))
      const after = watcher.hints.slice(1)
      if (after.length > 0) {
        fail(
          `a watcher on "a/" got ${JSON.stringify(after.map((s) => s.hint))} for writes outside a/`,
        )
      }
      await writer.put('a/x', 'inside')
      const inside = await watcher.until(
        () => watcher.hints.slice(1).some((s) => covers(s.hint, 'a/x')),
        allowed,
      )
      ensure(inside, `the write of a/x was not hinted to the watcher on "a/" within ${allowed} ms`)
      for (const s of watcher.hints.slice(1)) {
        const h2 = s.hint
        if (h2.kind === 'key') ensure(h2.key.startsWith('a/'), `hint for ${h2.key} outside a/`)
        if (h2.kind === 'prefix') {
          ensure(
            h2.prefix.startsWith('a/'),
            `prefix hint ${JSON.stringify(h2.prefix)} wider than a/`,
          )
        }
      }
      await watcher.stop()
      await everything.stop()
      h.report({ outsideWrites: OUTSIDE.length })
    },
    skip,
  ),

  check(
    'change-notification',
    'after a burst by several processes every watcher has re-read the last write of every key',
    async (h) => {
      const allowed = allowedDelayMs(h)
      const total = h.scale.watchBurstWrites
      ensure(total > 0, 'the burst needs writes (AGENT_STATE_WATCH_BURST_WRITES)')
      const count = Math.max(h.scale.processes, 2)
      const group = await writers(h, count)
      const watchers = [
        new Watcher(await h.backend({ realClock: true }), '', true),
        new Watcher(await h.backend({ realClock: true }), 'burst/', true),
        new Watcher(await h.backend({ realClock: true }), 'burst/k1', true),
      ]
      for (const w of watchers) await w.established(allowed)
      const keys = Array.from({ length: 40 }, (_, i) => `burst/k${String(i).padStart(2, '0')}`)
      const per = Math.ceil(total / group.length)
      await Promise.all(
        group.map((w, i) =>
          // Each writer starts at another key, so the writers race on every key.
          w.burst([...keys.slice(i * 10), ...keys.slice(0, i * 10)], per, `w${i}`),
        ),
      )
      const reader = await h.backend({ realClock: true })
      const final = new Map<string, string | null>()
      for (const key of keys) {
        const got = await reader.get(key)
        final.set(key, got === null ? null : text(got.value))
      }
      for (const w of watchers) {
        const mine = keys.filter((k) => k.startsWith(w.prefix))
        // A key the watcher never read is absent in its view: a key put and deleted between two
        // of a poller's listings was never visible to it, and no hint is owed for it.
        const seen = (k: string) => w.view.get(k) ?? null
        const settled = await w.until(() => mine.every((k) => seen(k) === final.get(k)), allowed)
        if (!settled) {
          const stale = mine.filter((k) => seen(k) !== final.get(k))
          fail(
            `watcher on ${JSON.stringify(w.prefix)}: ${stale.length} keys not re-read at their last write within ${allowed} ms of the burst's end (${stale
              .slice(0, 3)
              .map(
                (k) =>
                  `${k}: read ${JSON.stringify(seen(k))}, stored ${JSON.stringify(final.get(k))}`,
              )
              .join('; ')})`,
          )
        }
      }
      for (const w of watchers) await w.stop()
      h.report({ burstWrites: per * group.length, watchers: watchers.length })
    },
    skip,
  ),

  check(
    'change-notification',
    'an interrupted watch resyncs and misses no write made meanwhile',
    async (h) => {
      const allowed = allowedDelayMs(h)
      const [writer] = await writers(h, 1)
      if (writer === undefined) fail('no writer')
      const b = await h.backend({ realClock: true })
      // The suite's option wins; otherwise the instance's own seam (how `verify` proves it).
      const seam = watchInterruptOf(b)
      const interrupt =
        typeof h.watchInterrupt === 'function'
          ? h.watchInterrupt
          : typeof seam === 'function'
            ? () => seam()
            : undefined
      if (interrupt === undefined) fail('no watchInterrupt function and no WATCH_INTERRUPT seam')
      const watcher = new Watcher(b, 'cut/', true)
      await watcher.established(allowed)
      const rounds = 3
      for (let round = 0; round < rounds; round++) {
        await interrupt(b)
        const key = `cut/k${round}`
        await writer.put(key, `r${round}`)
        const seen = await watcher.until(() => watcher.view.get(key) === `r${round}`, allowed)
        ensure(
          seen,
          `round ${round}: the write of ${key} made after the watch was interrupted was neither hinted nor resynced within ${allowed} ms`,
        )
      }
      await watcher.stop()
      h.report({ interruptions: rounds })
    },
    {
      skip: (caps: Capabilities, options: ContractOptions) => {
        const claimed = changeNotificationSkip(caps)
        if (claimed !== undefined) return claimed
        const interrupt = options.watchInterrupt
        if (interrupt !== undefined) {
          return typeof interrupt === 'function'
            ? undefined
            : notApplicable(interrupt.notApplicable)
        }
        // No option: the probe instance's own seam (core's WATCH_INTERRUPT) decides. Without
        // either the check cannot run: the summary then shows the resync claim as untested
        // (`not-testable`), never as passed.
        const seam = probedInterruptSeam(caps)
        if (seam === undefined) return NO_INTERRUPT
        return seam === 'function' ? undefined : notApplicable(seam)
      },
      timeoutMs: TIMEOUT,
    },
  ),

  check(
    'change-notification',
    'aborting a watch or closing the backend ends it and the process exits on its own',
    async (h) => {
      if (h.process === undefined) {
        fail(
          'the backend claims changeNotification but no `process` option (child backend module) was given: a leaked watch handle only shows in a process that should exit, so this check fails instead of being skipped',
        )
      }
      const outcomes: string[] = []
      for (const how of ['abort', 'close'] as const) {
        const child = await h.child()
        const released = await child.request<WatchReleased>({
          type: 'watch-release',
          prefix: 'rel/',
          how,
        })
        ensureEqual(released.first, 'resync', `${how}: the first hint`)
        ensure(released.ended, `${how}: the pending next() did not end within 5 s`)
        const exitWithin = 10_000
        let timer: NodeJS.Timeout | undefined
        const exited = await Promise.race([
          child.exited.then(() => true),
          new Promise<boolean>((resolve) => {
            timer = setTimeout(() => resolve(false), exitWithin)
          }),
        ])
        clearTimeout(timer)
        ensure(
          exited,
          `${how}: the child that watched, ended the watch and closed the backend was still running ${exitWithin} ms later (a handle leaked)`,
        )
        outcomes.push(how)
      }
      h.report({ releasedChildren: outcomes.length })
    },
    skip,
  ),
]
