/**
 * The wake dispatcher across real processes (docs/runtime/wakes.md, Tests):
 * three dispatcher child processes over one backend, a mix of wakes (half
 * `timeout` and a sixth `schedule` wakes due at random times 1.5 to 4.5 s
 * after the three are up; a sixth `event` wakes from one publish, and a
 * sixth `webhook` calls posted to the children's endpoints, at random
 * moments of the kill cycles), dispatchers killed with SIGKILL
 * and restarted, frozen with SIGSTOP past the firing lease and continued, and
 * killing themselves after a firing decision (2% of handler calls). Run by
 * wake-kill-cycles.test.ts; with `broken`, the children fire without leases
 * and conditional writes (wake-kill-cycles-mutant.test.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { childArgs, freshName, type MultiProcessBackend } from '@agent-state/backend-targets'
import type { Backend } from '@agent-state/core'
import {
  createWebhookTrigger,
  getWake,
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

/** Wakes per backend: fewer on S3, whose every operation is an HTTP round trip. */
const WAKES: Readonly<Record<string, number>> = { s3: 30 }
const DEFAULT_WAKES = 60
const LEASE_TTL_MS = 600
const DISPATCHERS = 3
/** The backends of the kill cycles. */
export const KILL_BACKEND_NAMES = ['fs', 'sqlite', 'redis', 's3']
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** What one backend's kill cycles came to. */
export interface KillOutcome {
  /** Child exits that were neither the test's kills nor self-kills (with their stderr). */
  readonly failures: readonly string[]
  /** Every wake record of the namespace (a webhook call retried after a lost answer may have recorded two). */
  readonly registered: number
  /** Records per cause. */
  readonly causes: Readonly<Partial<Record<WakeCause, number>>>
  /** Webhook calls made, and answered `202` (retried on another endpoint until one is). */
  readonly calls: { readonly made: number; readonly accepted: number }
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
  kills: number,
  broken = false,
): Promise<KillOutcome> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-runtime-wake-kill-'))
  const target = make(dir)
  const namespace = freshName('wakes')
  const backend: Backend = await target.open(namespace)
  const node = await childArgs(join(PACKAGE_DIR, 'test/fixtures/wake-dispatcher-child.ts'))
  const count = WAKES[name] ?? DEFAULT_WAKES
  const tally = { kills: 0, stops: 0, selfKills: 0, failures: [] as string[] }
  let stopping = false
  let incarnation = 0
  const slots: ChildProcess[] = []
  /** Each slot's webhook endpoint, once its child listens. */
  const endpoints: Array<string | undefined> = []
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
        '0.02',
        broken ? 'broken' : 'sound',
      ],
      {
        cwd: PACKAGE_DIR,
        env: { ...process.env, ...target.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    ready.push(
      new Promise<void>((resolve) => {
        let out = ''
        child.stdout?.on('data', (chunk: Buffer) => {
          out += chunk.toString()
          const endpoint = /^ready (\S+)$/m.exec(out)?.[1]
          if (endpoint === undefined) return
          if (slots[slot] === child) endpoints[slot] = endpoint
          resolve()
        })
        child.on('exit', () => resolve())
      }),
    )
    child.on('exit', (code, signal) => {
      if (slots[slot] !== child || stopping) return
      // Not killed by the test: a self-kill after a firing decision, or a failure.
      if (signal === 'SIGKILL') tally.selfKills++
      else tally.failures.push(`${code} ${signal} ${stderr.slice(-2000)}`)
      endpoints[slot] = undefined
      start(slot)
    })
    slots[slot] = child
  }
  try {
    for (let slot = 0; slot < DISPATCHERS; slot++) start(slot)
    await Promise.all(ready)
    const sixth = Math.floor(count / 6)
    // Timeouts and schedules: all but the event and webhook sixths.
    const timed = count - 2 * sixth
    // Workers parked on a topic and on webhook triggers: the children's own handlers count their wakes.
    const parked = await Promise.all(
      Array.from({ length: 2 * sixth }, async (_, i) => {
        const hook = i < sixth ? createWebhookTrigger() : null
        const worker = await startWorker(backend, { workerId: `p${i}`, holder: 'test' })
        const suspension = await worker.suspend({
          reason: 'kill cycles',
          conditions: hook === null ? { onEvent: 'kill-topic' } : { trigger: hook.trigger },
        })
        return { hook, triggerId: suspension.autoResumeTrigger ?? '' }
      }),
    )
    const due = Date.now() + 1500
    for (let i = 0; i < timed; i += 20) {
      await Promise.all(
        Array.from({ length: Math.min(20, timed - i) }, (_, j) =>
          registerWake(backend, {
            target: { kind: 'worker', workerId: `w${i + j}` },
            cause: i + j < timed - sixth ? 'timeout' : 'schedule',
            dueAt: due + Math.floor(Math.random() * 3000),
          }),
        ),
      )
    }
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
            signal: AbortSignal.timeout(3000),
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
    const hooks = parked.filter((entry) => entry.hook !== null)
    for (let cycle = 0; cycle < kills; cycle++) {
      // Calls spread over the cycles, the publish in the middle: due at random moments of the kills.
      for (const entry of hooks.splice(0, Math.ceil(sixth / kills))) {
        posting.push(call(entry.hook?.secret ?? '', entry.triggerId))
      }
      if (cycle === Math.floor(kills / 2)) {
        posting.push(publishEvent(backend, 'kill-topic', { cycle }).then(() => undefined))
      }
      await sleep(100 + Math.floor(Math.random() * 200))
      const slot = Math.floor(Math.random() * DISPATCHERS)
      const victim = slots[slot] as ChildProcess
      if (cycle % 3 === 2) {
        // Frozen past its firing lease while another dispatcher takes its wakes, then continued.
        victim.kill('SIGSTOP')
        tally.stops++
        await sleep(LEASE_TTL_MS * 2)
        victim.kill('SIGCONT')
      }
      const killed = slots[(slot + 1) % DISPATCHERS] as ChildProcess
      slots[(slot + 1) % DISPATCHERS] = undefined as unknown as ChildProcess
      endpoints[(slot + 1) % DISPATCHERS] = undefined
      killed.kill('SIGKILL')
      tally.kills++
      start((slot + 1) % DISPATCHERS)
    }
    await Promise.all(posting)
    // A child killed between a call's two registration writes leaves a record without its marker
    // (its caller got no 202 and called again): the sweep completes it, as a dispatcher's would.
    await sweepWakeRegistrations(backend)
    const deadline = Date.now() + 120_000
    while ((await listAll(backend, 'wakes/due/')).length > 0 && Date.now() < deadline) {
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
    const seen = new Map<string, Set<string>>()
    for (const key of await listAll(backend, 'wake-seen/')) {
      const [, wakeId = '', firing = ''] = key.split('/')
      seen.set(wakeId, (seen.get(wakeId) ?? new Set()).add(firing))
    }
    let fired = 0
    let exactlyOnce = 0
    let redelivered = 0
    const lateness: number[] = []
    const ids = (await listAll(backend, 'wakes/records/')).map((key) => key.split('/')[2] ?? '')
    const causes: Partial<Record<WakeCause, number>> = {}
    for (const id of ids) {
      const record = await getWake(backend, id)
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
    return {
      failures: tally.failures,
      registered: ids.length,
      causes,
      calls: { made: calls.made, accepted: calls.accepted },
      fired,
      exactlyOnce,
      indexLeft: (await listAll(backend, 'wakes/due/')).length,
      summary: `${name}${broken ? ' (unfenced mutant)' : ''}: ${ids.length} wakes (${mix}; ${calls.accepted}/${calls.made} calls answered 202, other answers ${JSON.stringify(Object.fromEntries(calls.refused))}), 3 dispatcher processes, ${tally.kills} SIGKILL, ${tally.stops} SIGSTOP, ${tally.selfKills} self-kills after a firing: fired ${fired}, exactly once ${exactlyOnce}, redelivered ${redelivered}; lateness ${latencySummary(lateness)}`,
    }
  } finally {
    stopping = true
    for (const child of slots) child?.kill('SIGKILL')
    await backend.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
