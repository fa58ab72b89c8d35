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
  /^2\. a worker runs turns and is killed with SIGKILL$/m,
  /agent \d+\s+started worker researcher \(lease token 1\)/,
  /killed agent \d+ with SIGKILL mid-run/,
  /the stored snapshot is verified \(checksum\) and says: running, turn \d+/,
  /the lease expired: nobody owns the worker now/,
  /agent \d+\s+resumed worker researcher at turn \d+ with fencing token 2 \(the killed owner had 1\)/,
  /agent \d+\s+tried to resume the same worker: refused, CONCURRENT_RESUME/,
  /finished the worker at turn \d+: status done/,
  /^every step behaved as expected/m,
  /agent-state workers --url 'file:\.\/\.agent-state' --namespace demo-\d{14}-[0-9a-f]{4}/,
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
    while (!/started worker researcher/.test(stdout) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const agent = Number(/agent (\d+)\s+started worker/.exec(stdout)?.[1])
    expect(agent).toBeGreaterThan(0)
    expect(alive(agent)).toBe(true)
    child.kill('SIGINT')
    expect(await exited).toBe(130)
    await new Promise((resolve) => setTimeout(resolve, 500))
    expect(alive(agent)).toBe(false)
  }, 180_000)

  it('refuses a backend that processes cannot share, with one line and exit 2', async () => {
    const result = await runCli(['demo', 'memory:'])
    expect(result.status).toBe(2)
    expect(result.stderr.trim()).toBe(
      'agent-state demo: memory:: the demo runs its agent in several processes, and this backend is not shared between processes',
    )
  })

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
