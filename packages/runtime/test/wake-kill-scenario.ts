/**
 * The wake dispatcher across real processes (docs/runtime/wakes.md, Tests):
 * three dispatcher child processes over one backend, a mix of wakes (seven
 * tenths `timeout` and a tenth `schedule` wakes due at random over the kill
 * cycles, registered while they run; a tenth `event` wakes from one publish,
 * and a tenth `webhook` calls posted to the children's endpoints, at random
 * moments of the kill cycles), dispatchers killed with SIGKILL
 * and restarted, frozen with SIGSTOP past the firing lease and continued, and
 * killing themselves after a firing decision (about five handler calls in
 * all). Run by wake-kill-cycles.test.ts at the issue's counts; with `broken`,
 * the children fire without leases and conditional writes
 * (wake-kill-cycles-mutant.test.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { childArgs, freshName, type MultiProcessBackend } from '@agent-state/backend-targets'
import { type Backend, isAgentStateError } from '@agent-state/core'
import {
  createWebhookTrigger,
  getWake,
  inspectWorker,
  publishEvent,
  registerWake,
  startWorker,
  sweepWakeRegistrations,
  WAKE_CAUSES,
  type WakeCause,
  webhookTriggerUrl,
} from '../src/index.js'
import { PACKAGE_DIR } from './child-process.js'
import { latencySummary, listAll } from './wake-figures.js'

/**
 * The children's firing lease. 2 s, not less: at 1,000 wakes on a loaded host a firing (five
 * backend calls and the handler) outlived a 600 ms lease often enough that the redeliveries it
 * caused kept the dispatchers busy redelivering (688 of 1,000 on fs at load 35).
 */
const LEASE_TTL_MS = 2000
/** A frozen child stays stopped this long: past its leases, so another dispatcher takes its wakes. */
const FREEZE_MS = LEASE_TTL_MS + 500
const DISPATCHERS = 3
/** The backends of the kill cycles. */
export const KILL_BACKEND_NAMES = ['fs', 'sqlite', 'redis', 's3']
/** How many registrations, parks and verification reads the test process has in flight at once. */
const BATCH = 50
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs `task` for 0 to `count - 1`, `BATCH` at a time, and returns the results in order. */
async function inBatches<T>(count: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = []
  for (let i = 0; i < count; i += BATCH) {
    const size = Math.min(BATCH, count - i)
    results.push(...(await Promise.all(Array.from({ length: size }, (_, j) => task(i + j)))))
  }
  return results
}

/**
 * `read()` again when it failed `INDETERMINATE` (a reply the client gave up on: Redis's 5 s
 * command timeout met twice at load 30): only for the test's own sweep and reads, which are
 * idempotent (the sweep's one write is create-only). Three tries; any other error at once.
 */
async function again<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await read()
    } catch (error) {
      if (attempt === 3 || !isAgentStateError(error, 'INDETERMINATE')) throw error
    }
  }
}

/**
 * Whether `error` or one of its causes is a backend call that failed `UNAVAILABLE` (not applied)
 * or `INDETERMINATE` (may have been): what a caller retries. The test's parking meets both while
 * the children are frozen and the host is loaded: `SQLITE_BUSY` past the busy timeout behind a
 * frozen child's transaction, a Redis command past its 5 s timeout (two clean runs at load 37).
 */
function isRetriedFailure(error: unknown): boolean {
  for (let at: unknown = error, depth = 0; at !== undefined && depth < 5; depth++) {
    if (isAgentStateError(at, 'UNAVAILABLE') || isAgentStateError(at, 'INDETERMINATE')) return true
    at = (at as { cause?: unknown } | null)?.cause
  }
  return false
}

/** `error`'s code and message, then its causes' (an agent-state error wraps the backend's). */
function causeChain(error: unknown): string {
  const parts: string[] = []
  for (let at: unknown = error; at !== undefined && parts.length < 5; ) {
    const { code, message, cause } = (at ?? {}) as {
      code?: unknown
      message?: unknown
      cause?: unknown
    }
    parts.push(`${typeof code === 'string' ? `${code}: ` : ''}${String(message ?? at)}`)
    at = cause
  }
  return parts.join(' <- ')
}

/** Resolves once `n` of `promises` have resolved. */
function someOf(promises: readonly Promise<void>[], n: number): Promise<void> {
  return new Promise((resolve) => {
    let settled = 0
    for (const promise of promises) {
      void promise.then(() => {
        if (++settled === n) resolve()
      })
    }
  })
}

/** What one backend's kill cycles run. */
export interface KillPlan {
  /** SIGKILLs by the test (a SIGSTOP of another child every third one). */
  readonly kills: number
  /** Wakes to register (webhook calls answered twice after a lost answer may add a few). */
  readonly wakes: number
  /** The mutant: children firing without the lease and the conditional write. */
  readonly broken?: boolean
}

/** What one backend's kill cycles came to. */
export interface KillOutcome {
  /** Milliseconds spent starting the children, in the kill cycles (parking and registration included), draining the index, verifying. */
  readonly phases: {
    readonly start: number
    readonly cycles: number
    readonly drain: number
    readonly verify: number
  }
  /** Child exits that were neither the test's kills nor self-kills (with their stderr). */
  readonly failures: readonly string[]
  /** Every wake record of the namespace (a webhook call retried after a lost answer may have recorded two). */
  readonly registered: number
  /** Records per cause. */
  readonly causes: Readonly<Partial<Record<WakeCause, number>>>
  /** Webhook calls made, and answered `202` (retried on another endpoint until one is). */
  readonly calls: { readonly made: number; readonly accepted: number }
  /** SIGKILLs by the test (self-kills apart). */
  readonly kills: number
  /** Records `fired`. */
  readonly fired: number
  /** Fired, delivered, and seen by the handlers under exactly the recorded firing. */
  readonly exactlyOnce: number
  readonly indexLeft: number
  readonly summary: string
}

/** Runs the kill cycles over one multi-process backend; see the file comment. */
export async function killCycles(
  { name, target: make }: MultiProcessBackend,
  { kills, wakes: count, broken = false }: KillPlan,
): Promise<KillOutcome> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-runtime-wake-kill-'))
  const target = make(dir)
  const namespace = freshName('wakes')
  const backend: Backend = await target.open(namespace)
  const node = await childArgs(join(PACKAGE_DIR, 'test/fixtures/wake-dispatcher-child.ts'))
  // About five self-kills whatever the count: each costs a child's start-up, which the kills already pay.
  const selfKill = Math.min(0.02, 5 / count)
  const phases = { start: 0, cycles: 0, drain: 0, verify: 0 }
  let phaseStart = Date.now()
  const phase = (name: keyof typeof phases): void => {
    phases[name] = Date.now() - phaseStart
    phaseStart = Date.now()
  }
  const tally = { kills: 0, stops: 0, selfKills: 0, failures: [] as string[] }
  let stopping = false
  let incarnation = 0
  const slots: ChildProcess[] = []
  /** Each slot's webhook endpoint, once its child listens. */
  const endpoints: Array<string | undefined> = []
  /** Each slot's child's start-up: resolved once it listens (or exited). */
  const ready: Promise<void>[] = []
  const start = (slot: number): void => {
    const child = spawn(
      process.execPath,
      [
        ...node,
        target.url,
        namespace,
        `d${slot}-${incarnation++}`,
        String(LEASE_TTL_MS),
        '20',
        String(selfKill),
        broken ? 'broken' : 'sound',
      ],
      {
        cwd: PACKAGE_DIR,
        env: { ...process.env, ...target.env },
        // stdin: the child exits when it closes, so a test that times out leaves no dispatcher behind.
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    )
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    ready[slot] = new Promise<void>((resolve) => {
      let out = ''
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        const endpoint = /^ready (\S+)$/m.exec(out)?.[1]
        if (endpoint === undefined) return
        if (slots[slot] === child) endpoints[slot] = endpoint
        resolve()
      })
      child.on('exit', () => resolve())
    })
    child.on('exit', (code, signal) => {
      if (slots[slot] !== child || stopping) return
      // Not killed by the test: a self-kill after a firing decision, or a failure.
      if (signal === 'SIGKILL') tally.selfKills++
      else {
        // Counted now; its stderr may still be arriving ('exit' can come before the pipes
        // drain: a clean run once reported a child's exit 1 with no text), so it is filled in
        // once the pipe closes.
        const failure = tally.failures.push(`${code} ${signal} (stderr still open)`) - 1
        child.stderr?.once('close', () => {
          tally.failures[failure] = `${code} ${signal} ${stderr.slice(-2000)}`
        })
      }
      endpoints[slot] = undefined
      start(slot)
    })
    slots[slot] = child
  }
  try {
    for (let slot = 0; slot < DISPATCHERS; slot++) start(slot)
    let startupMs = 0
    const started = Promise.all(ready).then(() => {
      startupMs = Date.now() - phaseStart
    })
    // A tenth each of schedules, events and webhook calls (events and calls need a parked worker
    // each, seven backend calls, against a timeout's two), timeouts the rest.
    const tenth = Math.floor(count / 10)
    const timed = count - 2 * tenth
    // Workers parked on a topic and on webhook triggers: the children's own handlers count their wakes.
    // Parked while the children start and the kills go on (seconds to a minute at load 25; nothing
    // of theirs is due until the calls and the publish below, which wait for it).
    // A park that failed UNAVAILABLE or INDETERMINATE is tried again, as a caller would: a failed
    // suspend leaves the worker running, and registering again overwrites its topic waiter and
    // its registration under a new trigger id (the lost one is never called). A start that failed
    // INDETERMINATE may have created the worker (WORKER_EXISTS on a second start, seen in a clean
    // run at load 30), so the next attempt starts one under a new id; the wakes, which the checks
    // count, are registered by the suspension, never by the start. A suspend that failed
    // INDETERMINATE may have stored its suspension (a second suspend then fails
    // PRECONDITION_FAILED on the snapshot it moved, seen on Redis in a clean run at load 30), so
    // the worker's stored state is read first, and a stored suspension is the one that counts.
    const parking = inBatches(2 * tenth, async (i) => {
      const hook = i < tenth ? createWebhookTrigger() : null
      let worker: Awaited<ReturnType<typeof startWorker>> | undefined
      for (let attempt = 1; ; attempt++) {
        try {
          if (worker !== undefined) {
            const stored = await inspectWorker(backend, worker.workerId)
            if (stored.status === 'suspended' && stored.suspension !== null) {
              return { hook, triggerId: stored.suspension.autoResumeTrigger ?? '' }
            }
          }
          const workerId = attempt === 1 ? `p${i}` : `p${i}-${attempt}`
          worker ??= await startWorker(backend, { workerId, holder: 'test' })
          const suspension = await worker.suspend({
            reason: 'kill cycles',
            conditions: hook === null ? { onEvent: 'kill-topic' } : { trigger: hook.trigger },
          })
          return { hook, triggerId: suspension.autoResumeTrigger ?? '' }
        } catch (error) {
          if (attempt < 3 && isRetriedFailure(error)) {
            await sleep(500)
            continue
          }
          // The runtime's error names the mechanism; the backend's, its cause, says why.
          throw new Error(`parking worker p${i} failed: ${causeChain(error)}`, { cause: error })
        }
      }
    })
    parking.catch(() => undefined)
    // Set once parked (a holder: the loop below reads what the callback wrote).
    const parked: { hooks: Awaited<typeof parking> | null } = { hooks: null }
    // Its failure is handled where parking is awaited: this derived promise must not reject
    // unhandled (it did, failing the whole suite besides the test, in a clean run).
    parking.then(
      (entries) => {
        parked.hooks = entries.filter((entry) => entry.hook !== null)
      },
      () => undefined,
    )
    await started
    phase('start')
    // Due at random over about as long as the kill cycles take (a cycle may wait for a child's
    // start-up, then 200 ms on average; a third of them freeze a child past its leases), from
    // 1.5 s on: registered while they run.
    const cycleMs = Math.min(startupMs, 5000) / 2 + 200
    const spreadMs = Math.max(3000, kills * cycleMs + Math.floor(kills / 3) * FREEZE_MS - 1500)
    const due = Date.now() + 1500
    // A registration refused UNAVAILABLE (nothing written: SQLITE_BUSY behind a frozen child) is
    // sent again, and so is one that failed INDETERMINATE (a Redis command timed out at load 30):
    // if the first one landed, its record is a wake of its own, completed by the sweep below if
    // its marker is missing, and the checks count the records stored (at least the planned
    // wakes, every one fired exactly once).
    const registering = inBatches(timed, async (i) => {
      const wake = {
        target: { kind: 'worker' as const, workerId: `w${i}` },
        cause: i < timed - tenth ? ('timeout' as const) : ('schedule' as const),
        dueAt: due + Math.floor(Math.random() * spreadMs),
      }
      for (let attempt = 1; ; attempt++) {
        try {
          return await registerWake(backend, wake)
        } catch (error) {
          if (attempt === 3 || !isRetriedFailure(error)) throw error
          await sleep(500)
        }
      }
    })
    // Awaited after the cycles; a failure is reported there, not as an unhandled rejection meanwhile.
    registering.catch(() => undefined)
    const calls = { made: 0, accepted: 0, refused: new Map<string, number>() }
    // Only when the answer was lost: a refusal here is a child killed or frozen mid-call.
    const refusal = (why: string): void => {
      calls.refused.set(why, (calls.refused.get(why) ?? 0) + 1)
    }
    const posting: Promise<void>[] = []
    /** Posts one call, to a random child's endpoint, again elsewhere until one answers 202. */
    const call = async (secret: string, triggerId: string): Promise<void> => {
      calls.made++
      const deadline = Date.now() + 60_000
      for (let attempt = 0; Date.now() < deadline; attempt++) {
        const live = endpoints.filter((endpoint) => endpoint !== undefined)
        const endpoint = live[Math.floor(Math.random() * live.length)]
        try {
          // Every child restarting at once: wait for one.
          if (endpoint === undefined) throw new Error('no endpoint')
          const answer = await fetch(webhookTriggerUrl(endpoint, triggerId), {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
            body: JSON.stringify({ attempt }),
            // Long enough for a loaded host (an answer cut short is a call made twice), short of a lost child.
            signal: AbortSignal.timeout(10_000),
          })
          await answer.body?.cancel()
          if (answer.status === 202) {
            calls.accepted++
            return
          }
          refusal(String(answer.status))
        } catch (error) {
          // Killed or frozen mid-call: the call may have been recorded; another endpoint records it again.
          refusal((error as Error).name)
        }
        await sleep(50)
      }
    }
    let published = false
    for (let cycle = 0; cycle < kills; cycle++) {
      // The last cycle waits for the parking: every call and the publish come before the last kill.
      if (cycle === kills - 1) await parking
      // Calls spread over the cycles left once the workers are parked, the publish from the middle
      // on: due at random moments of the kills.
      const parkedHooks = parked.hooks
      if (parkedHooks !== null) {
        for (const entry of parkedHooks.splice(
          0,
          Math.ceil(parkedHooks.length / (kills - cycle)),
        )) {
          posting.push(call(entry.hook?.secret ?? '', entry.triggerId))
        }
        if (!published && cycle >= Math.floor(kills / 2)) {
          published = true
          // As a caller would: a publish whose outcome is unknown (a Redis command timed out at
          // load 25 in a clean run) is published again, which is safe (a suspended worker is
          // resumed once, by the first of its wakes); a failure is kept, never left unhandled.
          posting.push(
            again(() => publishEvent(backend, 'kill-topic', { cycle })).then(
              () => undefined,
              (error: unknown) => {
                tally.failures.push(`publish: ${causeChain(error)}`)
              },
            ),
          )
        }
      }
      // Two children listen before the next kill (the one restarted last may still be starting):
      // never fewer than two dispatchers, without waiting out every start-up (seconds at load 20).
      await someOf(ready, DISPATCHERS - 1)
      await sleep(100 + Math.floor(Math.random() * 200))
      const slot = Math.floor(Math.random() * DISPATCHERS)
      const victim = slots[slot] as ChildProcess
      if (cycle % 3 === 2) {
        // Frozen past its firing lease while another dispatcher takes its wakes, then continued.
        victim.kill('SIGSTOP')
        tally.stops++
        await sleep(FREEZE_MS)
        victim.kill('SIGCONT')
      }
      const killed = slots[(slot + 1) % DISPATCHERS] as ChildProcess
      slots[(slot + 1) % DISPATCHERS] = undefined as unknown as ChildProcess
      endpoints[(slot + 1) % DISPATCHERS] = undefined
      killed.kill('SIGKILL')
      tally.kills++
      start((slot + 1) % DISPATCHERS)
    }
    await Promise.all([registering, ...posting])
    phase('cycles')
    // A child killed between a call's two registration writes leaves a record without its marker
    // (its caller got no 202 and called again): the sweep completes it, as a dispatcher's would.
    let cursor: string | undefined
    do {
      const from = cursor === undefined ? {} : { cursor }
      cursor = (await again(() => sweepWakeRegistrations(backend, from))).cursor
    } while (cursor !== undefined)
    const deadline = Date.now() + 180_000
    while (
      (await again(() => listAll(backend, 'wakes/due/'))).length > 0 &&
      Date.now() < deadline
    ) {
      await sleep(200)
    }
    stopping = true
    await Promise.all(
      slots.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve()
            child.on('exit', () => resolve())
            child.kill('SIGTERM')
          }),
      ),
    )
    phase('drain')
    const seen = new Map<string, Set<string>>()
    for (const key of await again(() => listAll(backend, 'wake-seen/'))) {
      const [, wakeId = '', firing = ''] = key.split('/')
      seen.set(wakeId, (seen.get(wakeId) ?? new Set()).add(firing))
    }
    let fired = 0
    let exactlyOnce = 0
    let redelivered = 0
    const lateness: number[] = []
    const ids = (await again(() => listAll(backend, 'wakes/records/'))).map(
      (key) => key.split('/')[2] ?? '',
    )
    const causes: Partial<Record<WakeCause, number>> = {}
    for (const record of await inBatches(ids.length, (i) =>
      again(() => getWake(backend, ids[i] ?? '')),
    )) {
      const id = record.id
      causes[record.cause] = (causes[record.cause] ?? 0) + 1
      if (record.state !== 'fired' || record.firing == null) continue
      fired++
      lateness.push(record.firing.latenessMs)
      if ((record.delivery?.attempts ?? 0) > 1) redelivered++
      const firings = seen.get(id) ?? new Set()
      if (
        record.delivery?.deliveredAt !== null &&
        firings.size === 1 &&
        firings.has(`${record.firing.dispatcher}~${record.firing.token}`)
      ) {
        exactlyOnce++
      }
    }
    const mix = WAKE_CAUSES.filter((cause) => causes[cause] !== undefined)
      .map((cause) => `${causes[cause]} ${cause}`)
      .join(', ')
    const indexLeft = (await again(() => listAll(backend, 'wakes/due/'))).length
    phase('verify')
    return {
      phases,
      failures: tally.failures,
      registered: ids.length,
      causes,
      calls: { made: calls.made, accepted: calls.accepted },
      kills: tally.kills,
      fired,
      exactlyOnce,
      indexLeft,
      summary: `${name}${broken ? ' (unfenced mutant)' : ''}: ${ids.length} wakes (${mix}; ${calls.accepted}/${calls.made} calls answered 202, other answers ${JSON.stringify(Object.fromEntries(calls.refused))}), 3 dispatcher processes, ${tally.kills} SIGKILL, ${tally.stops} SIGSTOP, ${tally.selfKills} self-kills after a firing: fired ${fired}, exactly once ${exactlyOnce}, redelivered ${redelivered}; lateness ${latencySummary(lateness)}; ms starting ${phases.start}, cycles ${phases.cycles}, draining ${phases.drain}, verifying ${phases.verify}`,
    }
  } finally {
    stopping = true
    for (const child of slots) child?.kill('SIGKILL')
    await backend.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
