import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { BIN, removeTemps, runCli, tempDir } from './cli-process.js'
import {
  type Check,
  CRASH_CHECK,
  checkOf,
  checksWith,
  FENCE_CHECKS,
  FROZEN_CHECK,
  INTERRUPT_CHECK,
  MIB,
  SMALL,
  UNCLAIMED_FENCE_CHECK,
  VALUE_CHECK,
} from './verify-summary.js'

afterAll(removeTemps)

describe('agent-state verify', () => {
  it('passes on the memory backend, prints the summary and writes it as JSON', async () => {
    const json = join(tempDir('agent-state-cli-'), 'summary.json')
    const { status, stdout } = await runCli(['verify', 'memory:', '--json', json], { env: SMALL })
    expect(stdout).toMatch(/total\s+passed \d+\s+failed 0/)
    expect(status).toBe(0)
    const summary = JSON.parse(readFileSync(json, 'utf8'))
    expect(summary.totals.failed).toBe(0)
    expect(summary.totals.passed).toBeGreaterThan(20)
    // memory claims neither durability nor several processes: those skips are accepted.
    expect(summary.totals.skipped).toBeGreaterThan(0)
    expect(stdout).not.toContain('NOT PROVED')
  })

  it('runs on the embedded default (the filesystem) with every tier and leaves no namespace behind', async () => {
    const cwd = tempDir('agent-state-cli-default-')
    const json = join(cwd, 'summary.json')
    const { status, stdout } = await runCli(['verify', '--json', json], { cwd, env: SMALL })
    expect(stdout).toContain('file:./.agent-state')
    expect(stdout).toMatch(/total\s+passed \d+\s+failed 0/)
    expect(status).toBe(0)
    const summary = JSON.parse(readFileSync(json, 'utf8'))
    // fs claims durable and multiProcess: every tier runs. The only skips are the cross-key
    // fence's, which fs does not claim (its check that a fenced put is UNSUPPORTED runs).
    expect(checksWith(summary, 'skipped').map((c) => [c.id, c.skipCause])).toEqual(
      FENCE_CHECKS.map((id) => [id, 'capability-not-claimed']),
    )
    expect(checkOf(summary, UNCLAIMED_FENCE_CHECK).status).toBe('passed')
    expect(summary.categories.crash.passed).toBeGreaterThan(0)
    expect(summary.categories['multi-process'].skipped).toBe(0)
    // The claimed 64 MiB limit itself is written, read back, and one byte more refused.
    expect(checkOf(summary, VALUE_CHECK).scale).toEqual({ maxValueBytes: 64 * MIB })
    // Holders frozen inside their writes, at each of the fs write path's steps, as the package does.
    expect(checkOf(summary, FROZEN_CHECK).status).toBe('passed')
    expect(checkOf(summary, FROZEN_CHECK).scale.steppedRounds).toBeGreaterThan(0)
    expect(stdout).not.toContain('NOT PROVED')
    expect(readdirSync(join(cwd, '.agent-state'))).toEqual([])
  })

  it('passes on SQLite only through the declared database-lock limitation, reported as such', async () => {
    const cwd = tempDir('agent-state-cli-sqlite-')
    const json = join(cwd, 'summary.json')
    const { status, stdout } = await runCli(
      ['verify', `sqlite:${join(cwd, 'state.db')}`, '--json', json],
      { cwd, env: SMALL, timeoutMs: 600_000 },
    )
    const summary = JSON.parse(readFileSync(json, 'utf8'))
    expect(checksWith(summary, 'failed')).toEqual([])
    // The only skips: SQLite claims crossKeyFence (the check for backends that do not is not
    // applicable, its fence checks ran), and its polling watch has no channel to interrupt.
    expect(checksWith(summary, 'skipped').map((c) => [c.id, c.skipCause])).toEqual([
      [UNCLAIMED_FENCE_CHECK, 'not-applicable'],
      [INTERRUPT_CHECK, 'not-applicable'],
    ])
    for (const id of FENCE_CHECKS) expect(checkOf(summary, id).status).toBe('passed')
    expect(status).toBe(0)
    // Frozen inside its write transaction, a holder keeps the lock: every stepped round's
    // contender failed fast as declared, and the summary says so instead of a pass.
    const frozen = checkOf(summary, FROZEN_CHECK)
    expect(frozen.status).toBe('limitation')
    expect(frozen.scale.limitedRounds).toBeGreaterThan(0)
    expect(summary.totals.limitation).toBe(1)
    expect(stdout).toMatch(/1 declared limitation/)
    expect(stdout).toContain(
      `DECLARED LIMITATION  ${FROZEN_CHECK}: a holder frozen inside its write`,
    )
    expect(checkOf(summary, VALUE_CHECK).scale).toEqual({ maxValueBytes: 64 * MIB })
    expect(stdout).not.toContain('NOT PROVED')
  }, 600_000)

  it('exits 1 when a claimed check is skipped by omission (never started)', async () => {
    const json = join(tempDir('agent-state-cli-omit-'), 'summary.json')
    const { status, stdout } = await runCli(['verify', 'memory:', '--json', json], {
      env: { ...SMALL, AGENT_STATE_CONTRACT_CHECKS: '^basic/' },
    })
    const summary = JSON.parse(readFileSync(json, 'utf8'))
    // Everything that ran passed; what did not run is a claim left unproved.
    expect(summary.totals.failed).toBe(0)
    expect(summary.categories.basic.passed).toBeGreaterThan(0)
    const notRun = summary.checks.filter((c: Check) => c.skipCause === 'not-run')
    expect(notRun.length).toBeGreaterThan(10)
    expect(stdout).toContain(`NOT PROVED  ${VALUE_CHECK}: skipped (not run`)
    expect(status).toBe(1)
  })

  it('exits 1 when a claim is skipped as not testable (the value limit above the cap)', async () => {
    const json = join(tempDir('agent-state-cli-cap-'), 'summary.json')
    const { status, stdout } = await runCli(['verify', 'memory:', '--json', json], {
      env: { ...SMALL, AGENT_STATE_CONTRACT_MAX_VALUE_BYTES: String(MIB) },
    })
    const summary = JSON.parse(readFileSync(json, 'utf8'))
    expect(summary.totals.failed).toBe(0)
    expect(checkOf(summary, VALUE_CHECK).skipCause).toBe('not-testable')
    // The only unproved claim, and it alone makes the run fail.
    expect(stdout.match(/NOT PROVED/g)).toHaveLength(1)
    expect(stdout).toContain(`NOT PROVED  ${VALUE_CHECK}`)
    expect(status).toBe(1)
  })

  it('exits 1 when the crash or frozen-writer tier is configured at 0 cycles', async () => {
    const cwd = tempDir('agent-state-cli-zero-')
    const json = join(cwd, 'summary.json')
    const { status } = await runCli(['verify', '--json', json], {
      cwd,
      env: { ...SMALL, AGENT_STATE_CRASH_CYCLES: '0', AGENT_STATE_FROZEN_ROUNDS: '0' },
    })
    const summary = JSON.parse(readFileSync(json, 'utf8'))
    // Exactly the two tiers at 0 fail, as proving nothing; everything else passed.
    const failed = checksWith(summary, 'failed')
    expect(failed.map((c) => c.id).sort()).toEqual([CRASH_CHECK, FROZEN_CHECK].sort())
    for (const check of failed) expect(check.error).toMatch(/below the floor .*prove nothing/)
    expect(checksWith(summary, 'skipped').map((c) => c.id)).toEqual(FENCE_CHECKS)
    expect(status).toBe(1)
  })

  it('SIGTERM stops the command and every process it started', async () => {
    const cwd = tempDir('agent-state-cli-sigterm-')
    const child = spawn(process.execPath, [BIN, 'verify', `sqlite:${join(cwd, 'state.db')}`], {
      cwd,
      env: { ...process.env, AGENT_STATE_CRASH_CYCLES: '200' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c
    })
    child.stdout.resume()
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
    // Wait until the suite has forked contract children (the multi-process tiers).
    const deadline = Date.now() + 240_000
    let group: number[] = []
    while (Date.now() < deadline) {
      group = descendants(child.pid as number)
      if (group.some((pid) => commandOf(pid).includes('child-runner'))) break
      await new Promise((r) => setTimeout(r, 250))
    }
    expect(group.some((pid) => commandOf(pid).includes('child-runner'))).toBe(true)
    child.kill('SIGTERM')
    expect(await exited).toBe(143)
    expect(stderr).toContain('stopped by SIGTERM')
    await new Promise((r) => setTimeout(r, 500))
    const alive = group.filter((pid) => isAlive(pid))
    expect(alive, alive.map(commandOf).join('\n')).toEqual([])
  }, 300_000)
})

/** Every process below `root`, by walking /proc's parent links. */
function descendants(root: number): number[] {
  const parents = new Map<number, number>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      parents.set(Number(name), ppid)
    } catch {
      // Gone meanwhile.
    }
  }
  const found: number[] = []
  const frontier = [root]
  while (frontier.length > 0) {
    const parent = frontier.pop() as number
    for (const [pid, ppid] of parents) {
      if (ppid === parent) {
        found.push(pid)
        frontier.push(pid)
      }
    }
  }
  return found
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
  } catch {
    return ''
  }
}

function isAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // A zombie has exited; only its parent's bookkeeping is left.
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z'
  } catch {
    return false
  }
}
