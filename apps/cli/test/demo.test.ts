import { execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ensureDebianPackages } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { DEMO_STEPS, DemoFailure, runDemo } from '../src/demo/demo.js'
import { BIN, removeTemps, runCli, tempDir } from './cli-process.js'

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

const STORY = [
  /^1\. a session with a handoff$/m,
  /research stage read the handoff: status ready/,
  /^2\. a worker consumes queued events and files a ticket; SIGKILL lands mid-effect$/m,
  /provider \d+\s+a ticket tracker on 127\.0\.0\.1:\d+/,
  /agent \d+\s+spawned daemon researcher: a worker \(lease token 1\)/,
  /triggered 4 events/,
  /handled events 0-1: each acknowledged with a checkpoint/,
  /took event 2 \(file a ticket\), opened run researcher-ticket, recorded the effect as submitted/,
  /killed agent \d+ with SIGKILL after the provider filed the ticket, before its answer reached the agent/,
  /left behind: effect ticket-1 "submitted" .*event 2 unacknowledged at the head, snapshot at turn 2/,
  /the lease expired: nobody owns the worker now/,
  /agent \d+\s+resumed worker researcher at turn 2 with fencing token 2 \(the killed owner had 1\)/,
  /opened run researcher-ticket \(attempt 2\): asked the provider by idempotency key; it had filed T-101, so the ledger recorded "confirmed"/,
  /agent \d+\s+tried to resume the same worker and run: refused, CONCURRENT_RESUME and RUN_OWNED/,
  /event 2 re-delivered first \(attempt 2: it was in flight at the kill\); its effect returned the recorded T-101 without dispatching/,
  /finished the worker at turn 4 \(done\) and the run \(completed\); the provider filed the ticket exactly once/,
  /^every step behaved as expected/m,
  /^recovered after the kill, and why:$/m,
  /agent-state workers --url 'file:\.\/\.agent-state' --namespace demo-\d{14}-[0-9a-f]{4}/,
  /agent-state stat runs\/researcher-ticket\/run\.json --url/,
  /agent-state daemons --url 'file:\.\/\.agent-state' --namespace demo-/,
  /agent-state runs --url 'file:\.\/\.agent-state' --namespace demo-/,
]

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
    for (const line of STORY) expect(text, text).toMatch(line)
    // The namespace it printed holds what it says: inspect it as the printed command does.
    const namespace = /--namespace (demo-\S+)/.exec(text)?.[1] as string
    const workers = await runCli(['workers', '--json', '--namespace', namespace], { cwd })
    expect(workers.status, workers.stderr).toBe(0)
    const [worker] = JSON.parse(workers.stdout).workers
    expect(worker).toMatchObject({ workerId: 'researcher', status: 'done', lease: null })
    const runs = await runCli(['runs', '--json', '--namespace', namespace], { cwd })
    expect(runs.status, runs.stderr).toBe(0)
    expect(JSON.parse(runs.stdout).runs).toEqual([
      {
        runId: 'researcher-ticket',
        status: 'completed',
        attempt: { attemptId: 'researcher-ticket@2', holder: expect.any(String), count: 2 },
        position: { seq: 2, next: null },
        effects: { unknown: 0, submitted: 0, planned: 0, settled: 1, incomplete: [] },
        error: null,
      },
    ])
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

/** Whether a process runs (a zombie has exited). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}
