/**
 * The wake dispatcher across real processes (docs/runtime/wakes.md, Tests):
 * three dispatcher child processes over one backend, wakes due at random
 * times 1.5 to 4.5 s after the three are up, dispatchers killed with SIGKILL
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
import { getWake, registerWake } from '../src/index.js'
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
  readonly registered: number
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
        child.stdout?.on('data', () => resolve())
        child.on('exit', () => resolve())
      }),
    )
    child.on('exit', (code, signal) => {
      if (slots[slot] !== child || stopping) return
      // Not killed by the test: a self-kill after a firing decision, or a failure.
      if (signal === 'SIGKILL') tally.selfKills++
      else tally.failures.push(`${code} ${signal} ${stderr.slice(-2000)}`)
      start(slot)
    })
    slots[slot] = child
  }
  try {
    for (let slot = 0; slot < DISPATCHERS; slot++) start(slot)
    await Promise.all(ready)
    const due = Date.now() + 1500
    const ids: string[] = []
    for (let i = 0; i < count; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, count - i) }, (_, j) =>
          registerWake(backend, {
            target: { kind: 'worker', workerId: `w${i + j}` },
            cause: 'timeout',
            dueAt: due + Math.floor(Math.random() * 3000),
          }),
        ),
      )
      ids.push(...batch.map((wake) => wake.id))
    }
    for (let cycle = 0; cycle < kills; cycle++) {
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
      killed.kill('SIGKILL')
      tally.kills++
      start((slot + 1) % DISPATCHERS)
    }
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
    for (const id of ids) {
      const record = await getWake(backend, id)
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
    return {
      failures: tally.failures,
      registered: ids.length,
      fired,
      exactlyOnce,
      indexLeft: (await listAll(backend, 'wakes/due/')).length,
      summary: `${name}${broken ? ' (unfenced mutant)' : ''}: ${count} wakes, 3 dispatcher processes, ${tally.kills} SIGKILL, ${tally.stops} SIGSTOP, ${tally.selfKills} self-kills after a firing: fired ${fired}, exactly once ${exactlyOnce}, redelivered ${redelivered}; lateness ${latencySummary(lateness)}`,
    }
  } finally {
    stopping = true
    for (const child of slots) child?.kill('SIGKILL')
    await backend.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
