import { spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type ConformanceSummary, MIN_CRASH_CYCLES } from '@agent-state/contract'
import { freePort } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { BIN, removeTemps, runCli, tempDir } from './cli-process.js'
import { postgresUrl, redisUrl, s3Env, s3Url } from './services.js'

afterAll(removeTemps)

/**
 * Small tiers: these tests prove the command's behaviour, the backends prove themselves elsewhere.
 * The crash tier runs at the suite's floor: fewer cycles fail it as proving nothing. The
 * frozen-writer tier runs its default (and floor) of 10 rounds.
 */
const SMALL = {
  AGENT_STATE_CRASH_CYCLES: String(MIN_CRASH_CYCLES),
  AGENT_STATE_CONTRACT_INSTANCES: '16',
  AGENT_STATE_CONTRACT_INCREMENTS: '3',
}

const MIB = 1024 * 1024
const VALUE_CHECK = 'errors/value-too-large-beyond-maxvaluebytes'
const INTERRUPT_CHECK =
  'change-notification/an-interrupted-watch-resyncs-and-misses-no-write-made-meanwhile'
const FROZEN_CHECK =
  'multi-process/a-holder-frozen-mid-write-never-blocks-a-takeover-and-is-refused-when-it-wakes'
const CRASH_CHECK = 'crash/acknowledged-writes-survive-kill-9-and-nothing-is-torn'

type Check = ConformanceSummary['checks'][number] & { scale: Record<string, number> }

function checkOf(summary: ConformanceSummary, id: string): Check {
  const found = summary.checks.find((c) => c.id === id)
  if (found === undefined) throw new Error(`no check ${id} in the summary`)
  return found as Check
}

/** The checks of one status, with what the summary says of them (shown in full when it fails). */
function checksWith(summary: ConformanceSummary, status: string): Check[] {
  return summary.checks.filter((c) => c.status === status) as Check[]
}

function nonEmpty(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '')
}

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
    // fs claims durable and multiProcess: every tier runs, nothing is skipped.
    expect(checksWith(summary, 'skipped')).toEqual([])
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
    // The only skip is the one SQLite declares: its polling watch has no channel to interrupt.
    expect(checksWith(summary, 'skipped').map((c) => [c.id, c.skipCause])).toEqual([
      [INTERRUPT_CHECK, 'not-applicable'],
    ])
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

  it('passes on Redis with every tier it claims and proves the 64 MiB limit', async () => {
    const json = join(tempDir('agent-state-cli-redis-'), 'summary.json')
    // A 64 MiB write took 3.4-5.5 s on the loaded 2-core CI machine, past the default 5 s
    // command timeout (INDETERMINATE): the limit is proved with a timeout that fits the machine.
    const url = `${redisUrl()}?commandTimeoutMs=60000`
    const { status, stdout } = await runCli(['verify', url, '--json', json], {
      env: SMALL,
      timeoutMs: 600_000,
    })
    const summary = JSON.parse(readFileSync(json, 'utf8'))
    expect(checksWith(summary, 'failed')).toEqual([])
    expect(status).toBe(0)
    expect(summary.categories['multi-process'].passed).toBeGreaterThanOrEqual(4)
    expect(summary.categories.crash.passed).toBe(1)
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
    expect(checksWith(summary, 'skipped')).toEqual([])
    expect(status).toBe(1)
  })

  it('passes on PostgreSQL with every tier and never prints the password', async () => {
    const url = postgresUrl()
    const json = join(tempDir('agent-state-cli-pg-'), 'summary.json')
    const { status, stdout, stderr } = await runCli(['verify', url, '--json', json], {
      env: SMALL,
      timeoutMs: 900_000,
    })
    expect(stdout).toMatch(/total\s+passed \d+\s+failed 0/)
    expect(status, stderr).toBe(0)
    const summary = JSON.parse(readFileSync(json, 'utf8'))
    expect(summary.categories.crash.passed).toBeGreaterThan(0)
    expect(summary.categories['multi-process'].skipped).toBe(0)
    expect(stdout).not.toContain('NOT PROVED')
    const password = decodeURIComponent(new URL(url).password)
    expect(stdout + stderr + readFileSync(json, 'utf8')).not.toContain(password)
  }, 900_000)

  it('stops with one line before any check when the server is unreachable', async () => {
    const port = await freePort()
    const { status, stdout, stderr } = await runCli([
      'verify',
      `redis://agent:s3cr3t-pw@127.0.0.1:${port}/0?connectTimeoutMs=300`,
    ])
    expect(status).toBe(3)
    expect(nonEmpty(stderr), stderr).toHaveLength(1)
    expect(stderr).toContain(`redis://***@127.0.0.1:${port}/0`)
    expect(stdout).not.toMatch(/passed|failed/)
    expect(stdout + stderr).not.toContain('s3cr3t-pw')
  })

  it('stops with one line on a wrong password, a missing bucket and a bad URL', async () => {
    const wrong = await runCli(['verify', redisUrl('not-the-password')])
    expect(wrong.status).toBe(3)
    expect(nonEmpty(wrong.stderr), wrong.stderr).toHaveLength(1)
    expect(wrong.stderr).toMatch(/authentication/i)
    const bucket = await runCli(['verify', s3Url('no-such-bucket-verify', false)], { env: s3Env() })
    expect(bucket.status).toBe(3)
    expect(nonEmpty(bucket.stderr), bucket.stderr).toHaveLength(1)
    expect(bucket.stderr).toContain('bucket does not exist')
    const bad = await runCli(['verify', 'ftp://host/x'])
    expect(bad.status).toBe(2)
    expect(nonEmpty(bad.stderr)).toHaveLength(1)
    expect(bad.stderr).toContain('Unknown backend URL')
    expect(bad.stderr).not.toMatch(/\bat \S+:\d+:\d+/)
  })

  it('on S3 starts every tier and prints the AWS SDK Node-version notice at most once', async () => {
    const json = join(tempDir('agent-state-cli-s3-'), 'summary.json')
    const { status, stdout, stderr } = await runCli(['verify', s3Url(), '--json', json], {
      // As a user without the SDK variable set; tens of processes load the SDK.
      env: { ...s3Env(), ...SMALL, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: '' },
      timeoutMs: 900_000,
    })
    expect((stdout + stderr).split('NodeVersionSupportWarning').length - 1).toBeLessThanOrEqual(1)
    const summary = JSON.parse(readFileSync(json, 'utf8'))
    expect(summary.categories['multi-process'].passed).toBeGreaterThanOrEqual(4)
    expect(checksWith(summary, 'failed')).toEqual([])
    expect(checkOf(summary, VALUE_CHECK).scale).toEqual({ maxValueBytes: 64 * MIB })
    expect(stdout).not.toContain('NOT PROVED')
    expect(status).toBe(0)
  }, 900_000)

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
