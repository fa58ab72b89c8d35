import { execFileSync, spawn } from 'node:child_process'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Backend } from '@agent-state/core'
import { getWake, inspectRun, inspectWorker, openDaemonQueue } from '@agent-state/runtime'
import { runHeadKey, workerSnapshotKey } from '@agent-state/runtime/internal'
import { ensureDebianPackages } from '@agent-state/test-services'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { connect } from '../src/connect.js'
import { type AgentProcess, startDemoProcess } from '../src/demo/agent-process.js'
import {
  DEMO_STEPS,
  DEMO_WAKE,
  type DemoContext,
  DemoFailure,
  type DemoStep,
  runDemo,
} from '../src/demo/demo.js'
import { BIN, removeTemps, runCli, tempDir } from './cli-process.js'
import { DEMO_RUN_ROWS, DEMO_STORY } from './demo-story.js'

/** The runtime module the wake step's mutant replaces (resolved as the CLI's imports resolve it). */
const WORKER_WAKES = fileURLToPath(
  new URL('../../../packages/runtime/src/wake/worker-wakes.ts', import.meta.url),
)

const socket = `agent-state-demo-${process.pid}`
const tmux = (...args: string[]): string =>
  execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' })

afterAll(() => {
  try {
    tmux('kill-server')
  } catch {
    // No server left.
  }
  removeTemps()
})

/**
 * What step 6 printed, read from the state it left in `root`: the reviewer was resumed by the
 * event's wake (fired by a dispatcher), its timeout wake cancelled, its run reopened by a second
 * attempt under the resumed lease, both finished.
 */
async function expectWokenByEvent(root: string, namespace: string): Promise<void> {
  const backend = await connect(`file:${root}`, { namespace, timeoutMs: 10_000 })
  try {
    const body = await inspectWorker(backend, DEMO_WAKE.workerId)
    const resumed = body.audit.find((entry) => entry.event === 'worker_resumed')
    const cause = String(resumed?.detail.cause)
    expect(cause).toMatch(/^wake:/)
    const fired = await getWake(backend, cause.slice('wake:'.length))
    expect(fired).toMatchObject({ cause: 'event', state: 'fired' })
    expect(fired.firing?.dispatcher).toMatch(/^demo-dispatcher-\d+$/)
    // The resume audited which of the suspension's wakes fired and which it cancelled.
    const settled = body.audit.find((entry) => entry.event === 'wakes_cancelled')
    expect(settled?.detail).toMatchObject({ firedWake: fired.id, topic: DEMO_WAKE.topic })
    const cancelled = settled?.detail.cancelled as string[]
    expect(cancelled).toHaveLength(1)
    const timeout = await getWake(backend, String(cancelled[0]))
    expect(timeout).toMatchObject({ cause: 'timeout', state: 'cancelled' })
    expect(timeout.cancellation?.reason).toBe(`worker resumed by wake ${fired.id}`)
    const reopened = body.audit.find((entry) => entry.event === 'run_reopened')
    expect(reopened).toMatchObject({
      token: resumed?.token,
      detail: { runId: DEMO_WAKE.runId, attemptCount: 2 },
    })
    expect(body).toMatchObject({ status: 'done', result: { fix: 'T-103' } })
    const run = await inspectRun(backend, DEMO_WAKE.runId)
    expect(run.head).toMatchObject({ status: 'completed', attemptCount: 2 })
  } finally {
    await backend.close()
  }
}

describe('agent-state demo', () => {
  it('runs on the embedded default in a real terminal, prints the timeline and exits 0', async () => {
    ensureDebianPackages(['/usr/bin/tmux'], ['tmux'])
    const cwd = tempDir('agent-state-demo-')
    tmux(
      'new-session',
      '-d',
      '-s',
      'demo',
      '-x',
      '160',
      '-y',
      '50',
      '-c',
      cwd,
      `${process.execPath} ${BIN} demo; echo "EXIT=$?"; sleep 600`,
    )
    const deadline = Date.now() + 240_000
    let text = ''
    while (Date.now() < deadline) {
      text = tmux('capture-pane', '-p', '-J', '-t', 'demo')
      if (/^EXIT=\d+/m.test(text)) break
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    expect(text, text).toMatch(/^EXIT=0$/m)
    for (const line of DEMO_STORY) expect(text, text).toMatch(line)
    // The namespace it printed holds what it says: inspect it as the printed command does.
    const namespace = /--namespace (demo-\S+)/.exec(text)?.[1] as string
    const workers = await runCli(['workers', '--json', '--namespace', namespace], { cwd })
    expect(workers.status, workers.stderr).toBe(0)
    expect(JSON.parse(workers.stdout).workers).toEqual([
      expect.objectContaining({ workerId: 'researcher', status: 'done', lease: null }),
      // Step 6's worker: woken by the dispatcher, finished, nothing left to wake it.
      expect.objectContaining({
        workerId: 'reviewer',
        status: 'done',
        lease: null,
        nextWake: null,
      }),
    ])
    const runs = await runCli(['runs', '--json', '--namespace', namespace], { cwd })
    expect(runs.status, runs.stderr).toBe(0)
    expect(JSON.parse(runs.stdout).runs).toEqual(
      DEMO_RUN_ROWS.map((row) => ({
        ...row,
        attempt: { ...row.attempt, holder: expect.any(String) },
      })),
    )
    await expectWokenByEvent(join(cwd, '.agent-state'), namespace)
    const daemons = await runCli(['daemons', '--json', '--namespace', namespace], { cwd })
    expect(daemons.status, daemons.stderr).toBe(0)
    expect(JSON.parse(daemons.stdout).daemons).toEqual([
      expect.objectContaining({
        daemonId: 'researcher',
        state: 'done',
        pending: 0,
        inflight: null,
        queued: 0,
        iterations: 4,
      }),
    ])
    const sessions = await runCli(['sessions', '--json', '--namespace', namespace], { cwd })
    expect(JSON.parse(sessions.stdout).sessions[0]).toMatchObject({
      sessionId: 'triage',
      handoff: { state: 'present', status: 'ready', writer: 'planner' },
    })
  }, 300_000)

  it('SIGINT stops the demo and its agent processes (exit 130)', async () => {
    const cwd = tempDir('agent-state-demo-int-')
    const child = spawn(process.execPath, [BIN, 'demo'], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c
    })
    child.stderr.resume()
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
    const deadline = Date.now() + 120_000
    while (!/spawned daemon researcher/.test(stdout) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const agent = Number(/agent (\d+)\s+spawned daemon/.exec(stdout)?.[1])
    const provider = Number(/provider (\d+)\s+a ticket tracker/.exec(stdout)?.[1])
    expect(agent).toBeGreaterThan(0)
    expect(provider).toBeGreaterThan(0)
    expect(alive(agent)).toBe(true)
    expect(alive(provider)).toBe(true)
    child.kill('SIGINT')
    expect(await exited).toBe(130)
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(alive(agent)).toBe(false)
    expect(alive(provider)).toBe(false)
  }, 180_000)

  it('refuses a backend that processes cannot share, with one line and exit 2', async () => {
    const result = await runCli(['demo', 'memory:'])
    expect(result.status).toBe(2)
    expect(result.stderr.trim()).toBe(
      'agent-state demo: memory:: the demo runs its agent in several processes, and this backend is not shared between processes',
    )
  })

  it('fails (resolves false) when the provider cannot confirm the interrupted effect', async () => {
    // A provider whose lookups always say "absent": the effect is not retry-safe, so the resume
    // must stop with RUN_NEEDS_ATTENTION and the demo must not claim a recovery.
    const url = `file:${join(tempDir('agent-state-demo-fault-'), 'state')}`
    const lines: string[] = []
    process.env.AGENT_STATE_DEMO_PROVIDER_FAULT = 'forget-lookups'
    try {
      expect(await runDemo(url, 10_000, (line) => lines.push(line))).toBe(false)
    } finally {
      delete process.env.AGENT_STATE_DEMO_PROVIDER_FAULT
    }
    const text = lines.join('\n')
    expect(text, text).toMatch(/^4\. a fresh process resumes/m)
    expect(text, text).toMatch(/FAILED {2}the agent process \d+ ended first: .*RUN_NEEDS_ATTENTION/)
    expect(text).not.toContain('every step behaved as expected')
  }, 120_000)

  it('reports a step that misbehaves and resolves false (so the command exits 1)', async () => {
    const url = `file:${join(tempDir('agent-state-demo-bad-'), 'state')}`
    const lines: string[] = []
    const broken = {
      title: 'a step whose expectation does not hold',
      run: async () => {
        throw new DemoFailure('the impossible')
      },
    }
    const first = DEMO_STEPS[0]
    if (first === undefined) throw new Error('no demo steps')
    expect(await runDemo(url, 10_000, (line) => lines.push(line), [first, broken])).toBe(false)
    expect(lines).toContain('2. a step whose expectation does not hold')
    expect(lines).toContain('  FAILED  expected: the impossible')
    expect(lines.join('\n')).not.toContain('every step behaved as expected')
  })
})

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** A step's context on a real file backend, as `runDemo` makes it, with the notes collected. */
async function stepContext(namespace: string) {
  const url = `file:${join(tempDir('agent-state-demo-step-'), 'state')}`
  const backend = await connect(url, { namespace })
  const notes: string[] = []
  const ctx: DemoContext = {
    url,
    namespace,
    backend,
    workerId: 'researcher',
    runId: 'researcher-ticket',
    note: (_who, text) => notes.push(text),
    agents: new Map(),
    facts: new Map(),
  }
  return { ctx, backend, notes }
}

async function waitForNoLease(backend: Backend, key: string): Promise<void> {
  const deadline = Date.now() + 30_000
  while ((await backend.getLease(key)) !== null) {
    if (Date.now() > deadline) throw new Error(`the lease on ${key} outlived 30 s`)
    await sleep(25)
  }
}

describe("the demo's lease story holds whatever the machine's load", () => {
  const expiry = DEMO_STEPS.find((step) => step.title === "the dead owner's leases run out")
  const key = workerSnapshotKey('researcher')
  if (expiry === undefined) throw new Error('no expiry step')

  /** Runs `step` when the killed owner's lease ran out before it looked; the notes it left. */
  async function afterTheLeaseRanOut(step: DemoStep, namespace: string): Promise<string[]> {
    const { ctx, backend, notes } = await stepContext(namespace)
    try {
      const lease = await backend.acquireLease(key, { holder: 'work:1', ttlMs: 1 })
      ctx.facts.set('holder', 'work:1')
      ctx.facts.set('token', lease.token)
      await waitForNoLease(backend, key)
      await step.run(ctx)
      return notes
    } finally {
      await backend.close()
    }
  }

  it("passes when the killed owner's lease ran out before the step looked (a loaded machine)", async () => {
    expect(await afterTheLeaseRanOut(expiry, 'expired')).toEqual([
      'worker lease of work:1 (token 1) already ran out (run and delivery leases alike)',
      'the lease expired: nobody owns the worker now',
    ])
  })

  it("fails on commit c10d414's mutant: the step as it was, requiring the dead owner's lease to be live", async () => {
    // The mutant: the expiry step before c10d414, which failed the demo on a loaded machine.
    const mutant: DemoStep = {
      title: expiry.title,
      async run(ctx) {
        const lease = await ctx.backend.getLease(workerSnapshotKey(ctx.workerId))
        if (lease === null) throw new DemoFailure('the killed owner still holds the lease')
        ctx.note('demo', `worker lease held by ${lease.holder}`)
      },
    }
    await expect(afterTheLeaseRanOut(mutant, 'expired-mutant')).rejects.toThrow(
      new DemoFailure('the killed owner still holds the lease'),
    )
  })

  it('shows a live lease of the killed owner with its expiry, then waits it out', async () => {
    const { ctx, backend, notes } = await stepContext('live')
    try {
      const lease = await backend.acquireLease(key, { holder: 'work:1', ttlMs: 1500 })
      ctx.facts.set('holder', 'work:1')
      ctx.facts.set('token', lease.token)
      await expiry.run(ctx)
      expect(notes[0]).toMatch(/^worker lease held by work:1, expires in \d+ ms/)
      expect(notes[1]).toBe('the lease expired: nobody owns the worker now')
      expect(await backend.getLease(key)).toBeNull()
    } finally {
      await backend.close()
    }
  })

  it("fails when a live lease on the worker is not the killed owner's", async () => {
    const { ctx, backend } = await stepContext('taken')
    try {
      await backend.acquireLease(key, { holder: 'intruder:2', ttlMs: 60_000 })
      ctx.facts.set('holder', 'work:1')
      ctx.facts.set('token', 1)
      const outcome = expiry.run(ctx)
      await expect(outcome).rejects.toBeInstanceOf(DemoFailure)
      await expect(outcome).rejects.toThrow(
        "a worker lease still live is the killed owner's (work:1, token 1; found intruder:2, token 1)",
      )
    } finally {
      await backend.close()
    }
  })

  /**
   * Runs the working agent (`script`, one of src/demo's) until the provider holds its call, waits
   * four of its lease TTLs, checks it still holds its worker and run leases, then SIGKILLs it and
   * waits for them to run out.
   */
  async function keepsItsLeases(script: string, namespace: string): Promise<void> {
    const url = `file:${join(tempDir('agent-state-demo-keep-'), 'state')}`
    const backend = await connect(url, { namespace })
    const processes: AgentProcess[] = []
    try {
      const provider = startDemoProcess('demo-provider', [])
      processes.push(provider)
      const listening = await provider.waitFor((e) => e.event === 'listening', 30_000)
      const providerUrl = `http://127.0.0.1:${String(listening.port)}`
      const agent = startDemoProcess(script, [
        url,
        namespace,
        'work',
        'researcher',
        'researcher-ticket',
        providerUrl,
      ])
      processes.push(agent)
      const started = await agent.waitFor((e) => e.event === 'started', 30_000)
      await (await openDaemonQueue(backend, 'researcher')).trigger({
        kind: 'file-ticket',
        title: 'held',
      })
      await agent.waitFor((e) => e.event === 'dispatching', 30_000)
      for (let applied = 0; applied === 0; await sleep(25)) {
        const log = (await (await fetch(`${providerUrl}/log`)).json()) as {
          applied: Record<string, number>
        }
        applied = Object.values(log.applied).length
      }
      // Four times the demo's 1.5 s TTL: without renewals every lease would be gone by now.
      await sleep(6000)
      expect(agent.child.exitCode).toBeNull()
      expect(await backend.getLease(key)).toMatchObject({
        holder: started.holder,
        token: started.token,
      })
      expect((await backend.getLease(runHeadKey('researcher-ticket')))?.holder).toMatch(
        new RegExp(`:${agent.pid}:`),
      )
      agent.child.kill('SIGKILL')
      await agent.exited
      await waitForNoLease(backend, key)
      await waitForNoLease(backend, runHeadKey('researcher-ticket'))
    } finally {
      for (const child of processes) if (child.child.exitCode === null) child.child.kill('SIGKILL')
      await backend.close()
    }
  }

  it('the working agent keeps its leases while the provider holds its call; they run out after SIGKILL', async () => {
    await keepsItsLeases('demo-agent', 'keep-alive')
  }, 120_000)

  it("fails on commit c10d414's mutant: the working agent without its renewals while it waits", async () => {
    // The mutant: src/demo/demo-agent.ts with the working agent's keepAlive removed, written next
    // to it (so its imports resolve the same) for this test only.
    const source = fileURLToPath(new URL('../src/demo/demo-agent.ts', import.meta.url))
    const renewal =
      /const stopRenewing = keepAlive\(async \(\) => \{\n\s+await daemon\.heartbeat\(\)\n\s+if \(callOut\) await run\?\.heartbeat\(\)\n\s+\}, DEMO_RENEW_MS\)/g
    const text = readFileSync(source, 'utf8')
    expect(text.match(renewal)).toHaveLength(1)
    const name = `demo-agent-${process.pid}.mutant`
    const mutant = join(dirname(source), `${name}.ts`)
    writeFileSync(mutant, text.replace(renewal, 'const stopRenewing = async () => undefined'))
    try {
      await expect(keepsItsLeases(name, 'keep-alive-mutant')).rejects.toThrow(
        /expected null to match object/,
      )
    } finally {
      rmSync(mutant, { force: true })
    }
  }, 120_000)
})

/** Whether a process runs (a zombie has exited). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}

describe("the demo's wake step", () => {
  /**
   * Runs the wake step (the demo's last) with `demo` (the real module, or one imported over a
   * broken runtime), against a fresh provider process; its notes, or its failure.
   */
  async function wakeStepWith(demo: typeof import('../src/demo/demo.js'), namespace: string) {
    const step = demo.DEMO_STEPS.at(-1)
    if (step === undefined) throw new Error('no demo steps')
    const provider = startDemoProcess('demo-provider', [])
    const { ctx, backend, notes } = await stepContext(namespace)
    try {
      const listening = await provider.waitFor((e) => e.event === 'listening', 30_000)
      ctx.facts.set('provider', `http://127.0.0.1:${String(listening.port)}`)
      const failure = await step.run(ctx).then(
        () => null,
        (error: Error) => error.message,
      )
      return { title: step.title, notes, failure }
    } finally {
      provider.child.kill('SIGKILL')
      await backend.close()
    }
  }

  afterEach(() => {
    vi.doUnmock(WORKER_WAKES)
    vi.resetModules()
  })

  it('passes on the real runtime, noting the wake, the cancelled timeout and the reopened run', async () => {
    const outcome = await wakeStepWith(await import('../src/demo/demo.js'), 'wake-step')
    expect(outcome.failure).toBeNull()
    expect(outcome.notes.at(-1)).toMatch(
      /^reopened run reviewer-fix under its new lease \(token 2, attempt 2\): review-1 not repeated, filed T-\d+; run completed, worker done$/,
    )
  })

  it('fails on a runtime whose resume leaves the timeout wake pending (no sibling cancel)', async () => {
    vi.resetModules()
    vi.doMock(WORKER_WAKES, async (importOriginal) => ({
      ...(await importOriginal<Record<string, unknown>>()),
      settleWorkerWakes: async () => [],
    }))
    const outcome = await wakeStepWith(await import('../src/demo/demo.js'), 'wake-step-mutant')
    expect(outcome.failure).toBe('the timeout wake is cancelled, not fired')
  })
})
