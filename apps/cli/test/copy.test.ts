import { execFileSync, spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CopyCheckMode } from '../src/commands/copy.js'
import type { CopyAction, CopyCheck } from '../src/commands/copy-key.js'
import { cliCommand, removeTemps, runCli, runScript, tempDir } from './cli-process.js'
import { freshName, postgresUrl, redisUrl, s3Env, s3Url } from './services.js'

afterAll(removeTemps)

const MANY = 10_000

/** The page size of the CLI's listing (src/commands/keys.ts): a copy must span several pages. */
const LIST_PAGE = 1000

/**
 * Keys of the S3 copy: `AGENT_STATE_COPY_S3_KEYS`, default 10,000, the count issue 15 requires of
 * every copy (fs → SQLite, Redis and S3). Every key costs round trips to RGW (a read, the write,
 * the check; a head per key on the rerun), so this is the suite's longest test (4–6 minutes at
 * load 20); a smaller count (above two listing pages, else this fails) is for local runs only.
 */
const S3_KEYS = (() => {
  const raw = process.env.AGENT_STATE_COPY_S3_KEYS
  const value = raw === undefined || raw === '' ? 10_000 : Number(raw)
  if (!Number.isSafeInteger(value) || value <= 2 * LIST_PAGE)
    throw new Error(
      `AGENT_STATE_COPY_S3_KEYS must be an integer above ${2 * LIST_PAGE} (got ${raw})`,
    )
  return value
})()

async function ops(url: string, list: unknown[], namespace?: string): Promise<unknown[]> {
  const result = await runScript('./backend-ops.ts', [
    url,
    JSON.stringify(list),
    ...(namespace === undefined ? [] : [namespace]),
  ])
  if (result.status !== 0) throw new Error(`backend-ops failed: ${result.stderr}`)
  return JSON.parse(result.stdout.trim().split('\n').at(-1) as string)
}

interface CopyJson {
  dryRun: boolean
  ok: boolean
  checkMode: CopyCheckMode
  durationMs: number
  totals: { keys: number; actions: Record<CopyAction, number>; checks: Record<CopyCheck, number> }
  keys: { key: string; action: string; check: string; detail?: string }[]
}

/** The first keys a copy did not create or find the same, with their details, for a failure's message. */
function notCopied(report: CopyJson): string {
  const odd = report.keys.filter((k) => k.action !== 'created' && k.action !== 'same')
  return `${odd.length} keys not copied, first: ${JSON.stringify(odd.slice(0, 5))}`
}

async function copyJson(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ status: number | null; report: CopyJson; ms: number; stderr: string }> {
  const result = await runCli(['copy', ...args, '--json'], { env, timeoutMs: 1_200_000 })
  let report: CopyJson
  try {
    report = JSON.parse(result.stdout) as CopyJson
  } catch {
    throw new Error(`copy printed no JSON (status ${result.status}): ${result.stderr}`)
  }
  return { status: result.status, report, ms: result.ms, stderr: result.stderr }
}

/**
 * The process running the CLI under the `agent-state` wrapper `pid` (bin/agent-state.js starts it
 * as its child, leading its own process group).
 */
function cliProcessOf(pid: number): number {
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
    .trim()
    .split(/\s+/)
    .filter((text) => text !== '')
  if (children.length !== 1)
    throw new Error(`agent-state ${pid} runs ${children.length} CLI processes`)
  return Number(children[0])
}

/**
 * Starts `agent-state copy <args…> --jsonl` and, once it has reported `killAfter` keys (each
 * reported key was written and checked), kills the process doing the copy with SIGKILL (its whole
 * group: a SIGKILL to the wrapper alone would leave the copy running); resolves with the keys it
 * reported. The wrapper then ends as `stopped by SIGKILL`.
 */
function copyKilledAfter(args: readonly string[], killAfter: number): Promise<string[]> {
  const { bin, env } = cliCommand()
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'copy', ...args, '--jsonl'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const reported: string[] = []
    let killed = false
    let pending = ''
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk
      const lines = pending.split('\n')
      pending = lines.pop() ?? ''
      for (const line of lines) {
        const parsed = JSON.parse(line) as { type: string; key?: string }
        if (parsed.type === 'key') reported.push(parsed.key as string)
      }
      if (reported.length >= killAfter && !killed) {
        killed = true
        process.kill(-cliProcessOf(child.pid as number), 'SIGKILL')
      }
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), 600_000)
    child.on('error', reject)
    child.on('close', (status, signal) => {
      clearTimeout(timer)
      if (
        status !== 137 ||
        !stderr.includes('agent-state: stopped by SIGKILL') ||
        reported.length < killAfter
      ) {
        reject(
          new Error(
            `the copy was to be killed after ${killAfter} keys; it ended with ${status ?? signal} after ${reported.length}: ${stderr}`,
          ),
        )
      } else resolve(reported)
    })
  })
}

describe('copy many keys from the filesystem to each backend (real servers)', () => {
  // One source per size: `file:` URLs of fs namespaces holding `count` keys under runs/r1/.
  const sources = new Map<number, string>()
  beforeAll(async () => {
    await Promise.all(
      [...new Set([MANY, S3_KEYS])].map(async (count) => {
        const source = `file:${join(tempDir('agent-state-copy-src-'), 'state')}`
        expect(await ops(source, [{ many: count, prefix: 'runs/r1/' }])).toEqual([count])
        sources.set(count, source)
      }),
    )
  }, 600_000)

  const targets: Array<{
    name: string
    keys: number
    url: () => string
    args?: () => string[]
    env?: () => Record<string, string>
  }> = [
    {
      name: 'sqlite',
      keys: MANY,
      url: () => `sqlite:${join(tempDir('agent-state-copy-sqlite-'), 'state.db')}`,
    },
    {
      name: 'redis',
      keys: MANY,
      // A clean run at load 20-37 created 9984 of 10000 keys: 16 not created, the copy's
      // concurrency, so every write in flight at one moment. That run did not print why; a stall
      // past the default 5 s command timeout is the likely cause (the verify test met it too), so
      // the timeout fits the machine here, and a failure's message now names the keys' details.
      url: () => `${redisUrl()}?commandTimeoutMs=60000`,
      args: () => ['--to-namespace', freshName('copy')],
    },
    { name: 's3', keys: S3_KEYS, url: () => s3Url(), env: s3Env },
    { name: 'postgres', keys: MANY, url: () => postgresUrl() },
  ]
  for (const target of targets) {
    const count = target.keys
    it(`fs → ${target.name}: copies all ${count} keys with their writer, checks each, and a rerun copies nothing`, async () => {
      const source = sources.get(count) as string
      const url = target.url()
      const extra = target.args?.() ?? []
      const env = target.env?.() ?? {}
      const first = await copyJson([source, url, ...extra], env)
      console.log(
        `copy fs → ${target.name}, ${count} keys: ${first.report.durationMs} ms in the command, ${first.ms} ms process wall time`,
      )
      expect(first.report.totals.keys).toBe(count)
      expect(first.report.totals.actions.created, notCopied(first.report)).toBe(count)
      expect(first.report.totals.checks.same).toBe(count)
      expect(first.status).toBe(0)
      const again = await copyJson([source, url, ...extra], env)
      console.log(`rerun fs → ${target.name}: ${again.report.durationMs} ms`)
      expect(again.report.totals.actions.same, notCopied(again.report)).toBe(count)
      expect(again.report.totals.actions.created + again.report.totals.actions.updated).toBe(0)
      expect(again.status).toBe(0)
      const ns = extra.length > 0 ? ['--namespace', extra[1] as string] : []
      const stat = await runCli(['stat', 'runs/r1/000003', '--json', '--url', url, ...ns], { env })
      expect(stat.status, stat.stderr).toBe(0)
      expect(JSON.parse(stat.stdout).value.writer).toEqual({ writerId: 'worker-7', workerId: 'w7' })
    }, 1_800_000)
  }

  it(`fs → sqlite: a copy killed with SIGKILL halfway through ${MANY} keys resumes: the rerun copies only what is missing, and every key checks, by bytes too`, async () => {
    const source = sources.get(MANY) as string
    const url = `sqlite:${join(tempDir('agent-state-copy-resume-'), 'state.db')}`
    const reported = await copyKilledAfter([source, url], MANY / 2)
    // What the killed copy left: every key it reported, and the writes in flight at the kill.
    const listed = await runCli(['ls', '-r', '--json', '--url', url])
    expect(listed.status, listed.stderr).toBe(0)
    const present = new Set(
      (JSON.parse(listed.stdout) as { keys: { key: string }[] }).keys.map((k) => k.key),
    )
    for (const key of reported) expect(present.has(key), `${key} was reported copied`).toBe(true)
    expect(present.size).toBeLessThan(MANY)
    console.log(
      `copy fs → sqlite killed after ${reported.length} reported keys: ${present.size} of ${MANY} at the destination`,
    )
    const rerun = await copyJson([source, url])
    expect(rerun.report.totals.keys).toBe(MANY)
    console.log(`resumed copy fs → sqlite: ${rerun.report.durationMs} ms`)
    // Only what is missing is written: created exactly the keys absent after the kill.
    const created = rerun.report.keys.filter((k) => k.action === 'created').map((k) => k.key)
    expect(created.length).toBe(MANY - present.size)
    for (const key of created) expect(present.has(key), `${key} was there already`).toBe(false)
    expect(rerun.report.totals.actions).toEqual({
      created: MANY - present.size,
      updated: 0,
      same: present.size,
      'skipped-leased': 0,
      'skipped-newer': 0,
      conflict: 0,
      vanished: 0,
      error: 0,
    })
    expect(rerun.report.totals.checks).toEqual({ same: MANY, differs: 0, missing: 0, error: 0 })
    expect(rerun.report.checkMode).toBe('size-and-writer')
    expect(rerun.status).toBe(0)
    // The exact check: every value's bytes at the destination hash as the source's.
    const exact = await copyJson([source, url, '--checksum', '--dry-run'])
    expect(exact.report.checkMode).toBe('sha256')
    console.log(`--checksum --dry-run fs → sqlite, ${MANY} keys: ${exact.report.durationMs} ms`)
    expect(exact.report.totals.checks).toEqual({ same: MANY, differs: 0, missing: 0, error: 0 })
    expect(exact.report.totals.actions.same).toBe(MANY)
    expect(exact.status).toBe(0)
  }, 600_000)

  it(`postgres → fs: all ${MANY} keys come back with a clean check report`, async () => {
    const source = sources.get(MANY) as string
    const postgres = postgresUrl()
    const there = await copyJson([source, postgres])
    expect(there.status, there.stderr).toBe(0)
    expect(there.report.totals.checks.same).toBe(MANY)
    const backDir = tempDir('agent-state-copy-pg-back-')
    const back = `file:${join(backDir, 'state')}`
    const returned = await copyJson([postgres, back])
    console.log(`copy postgres → fs, ${MANY} keys: ${returned.report.durationMs} ms in the command`)
    expect(returned.report.totals.keys).toBe(MANY)
    expect(returned.report.totals.actions.created).toBe(MANY)
    expect(returned.report.totals.checks.same).toBe(MANY)
    expect(returned.report.ok).toBe(true)
    expect(returned.status, returned.stderr).toBe(0)
    const stat = await runCli(['stat', 'runs/r1/000003', '--json', '--url', back])
    expect(stat.status, stat.stderr).toBe(0)
    expect(JSON.parse(stat.stdout).value.writer).toEqual({ writerId: 'worker-7', workerId: 'w7' })
    // Removed here, inside the test's own time: the shared afterAll, removing this and the
    // 10,000-file sources together, once took over its two minutes at load 50.
    rmSync(backDir, { recursive: true, force: true })
  }, 1_800_000)
})

describe('copy: what it refuses, reports and resumes', () => {
  it('skips a key under a live lease at the source (exit 1) unless --include-leased', async () => {
    const src = `file:${join(tempDir('agent-state-copy-'), 'src')}`
    const dst = `sqlite:${join(tempDir('agent-state-copy-'), 'dst.db')}`
    await ops(src, [
      { put: 'a', value: 'one', writer: 'w' },
      { put: 'busy', value: 'in use', writer: 'w' },
      { lease: 'busy', holder: 'agent-9' },
    ])
    const first = await copyJson([src, dst])
    expect(first.status).toBe(1)
    expect(first.report.keys).toEqual([
      { key: 'a', action: 'created', check: 'same' },
      {
        key: 'busy',
        action: 'skipped-leased',
        check: 'missing',
        detail: 'leased by agent-9 at the source',
      },
    ])
    const text = await runCli(['copy', src, dst])
    expect(text.status).toBe(1)
    expect(text.stdout).toMatch(/leased\s+missing\s+busy\s+leased by agent-9 at the source/)
    expect(text.stdout).toContain('--include-leased')
    const forced = await copyJson([src, dst, '--include-leased'])
    expect(forced.status).toBe(0)
    expect(forced.report.keys.map((k) => k.action)).toEqual(['same', 'created'])
  })

  it('never overwrites a destination value written after the source one, unless asked', async () => {
    const src = `file:${join(tempDir('agent-state-copy-'), 'src')}`
    const dst = `file:${join(tempDir('agent-state-copy-'), 'dst')}`
    await ops(src, [{ put: 'k', value: 'source', writer: 'w' }])
    await ops(dst, [{ put: 'k', value: 'newer!', writer: 'w' }])
    // Same size and writer, written later: the fast check cannot tell them apart, and says what
    // its `same` rests on...
    const fast = await copyJson([src, dst])
    expect(fast.report.keys).toEqual([{ key: 'k', action: 'same', check: 'same' }])
    expect(fast.report.checkMode).toBe('size-and-writer')
    expect(fast.status).toBe(0)
    const fastText = await runCli(['copy', src, dst])
    expect(fastText.stdout).toContain(
      'check by size and writer, not bytes (--checksum compares bytes): same 1, differs 0, missing 0, error 0',
    )
    // ...the byte check can, and keeps the newer destination value.
    const plan = await runCli(['copy', src, dst, '--checksum', '--dry-run'])
    expect(plan.stdout).toContain(
      'before the copy by SHA-256 of the bytes: same 0, differs 1, missing 0, error 0',
    )
    const checked = await copyJson([src, dst, '--checksum'])
    expect(checked.report.checkMode).toBe('sha256')
    expect(checked.report.keys[0]).toMatchObject({
      key: 'k',
      action: 'skipped-newer',
      check: 'differs',
    })
    expect(checked.status).toBe(1)
    const cat = await runCli(['cat', 'k', '--url', dst])
    expect(cat.stdout).toBe('newer!')
    const forced = await copyJson([src, dst, '--checksum', '--overwrite-newer'])
    expect(forced.report.keys).toEqual([{ key: 'k', action: 'updated', check: 'same' }])
    expect(forced.status).toBe(0)
    expect((await runCli(['cat', 'k', '--url', dst])).stdout).toBe('source')
  })

  it('updates a destination value older than the source with compare-and-set', async () => {
    const src = `file:${join(tempDir('agent-state-copy-'), 'src')}`
    const dst = `file:${join(tempDir('agent-state-copy-'), 'dst')}`
    await ops(dst, [{ put: 'k', value: 'old value', writer: 'w' }])
    await ops(src, [{ put: 'k', value: 'new', writer: 'w' }])
    const result = await copyJson([src, dst])
    expect(result.report.keys).toEqual([{ key: 'k', action: 'updated', check: 'same' }])
    expect((await runCli(['cat', 'k', '--url', dst])).stdout).toBe('new')
  })

  it('--dry-run prints the plan and writes nothing', async () => {
    const src = `file:${join(tempDir('agent-state-copy-'), 'src')}`
    const dst = `file:${join(tempDir('agent-state-copy-'), 'dst')}`
    await ops(src, [{ many: 25, prefix: 'p/' }])
    const plan = await copyJson([src, dst, '--dry-run'])
    expect(plan.status).toBe(0)
    expect(plan.report.dryRun).toBe(true)
    expect(plan.report.totals.actions.created).toBe(25)
    expect(plan.report.totals.checks.missing).toBe(25)
    const text = await runCli(['copy', src, dst, '--dry-run'])
    expect(text.stdout).toMatch(/would create\s+missing\s+p\/000000/)
    const listed = await runCli(['ls', '-r', '--json', '--url', dst])
    expect(JSON.parse(listed.stdout).keys).toEqual([])
  })

  it('reports a key it cannot write as an error and exits 1; --prefix limits the copy', async () => {
    const src = `file:${join(tempDir('agent-state-copy-'), 'src')}`
    const dst = `file:${join(tempDir('agent-state-copy-'), 'dst')}`
    await ops(src, [
      { put: 'in/a', value: 'a' },
      { put: 'in/b', value: 'b' },
      { put: 'out/c', value: 'c' },
    ])
    await ops(dst, [{ lease: 'in/b', holder: 'someone-else' }])
    const result = await copyJson([src, dst, '--prefix', 'in/'])
    expect(result.status).toBe(1)
    expect(result.report.totals.keys).toBe(2)
    expect(result.report.keys[0]).toEqual({ key: 'in/a', action: 'created', check: 'same' })
    expect(result.report.keys[1]).toMatchObject({ key: 'in/b', action: 'error', check: 'error' })
    expect(result.report.keys[1]?.detail).toMatch(/^LEASE_HELD: /)
  })

  it('streams one JSON object per key with --jsonl, then the totals', async () => {
    const src = `file:${join(tempDir('agent-state-copy-'), 'src')}`
    const dst = `file:${join(tempDir('agent-state-copy-'), 'dst')}`
    await ops(src, [{ many: 5, prefix: 'x/' }])
    const result = await runCli(['copy', src, dst, '--jsonl'])
    expect(result.status).toBe(0)
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(lines.filter((l) => l.type === 'key')).toHaveLength(5)
    expect(lines.at(-1)).toMatchObject({ type: 'totals', ok: true, keys: 5 })
    // No terminal, no progress bar.
    expect(result.stderr).toBe('')
  })

  it('refuses to copy a namespace onto itself', async () => {
    const url = `file:${join(tempDir('agent-state-copy-'), 'same')}`
    const result = await runCli(['copy', url, url])
    expect(result.status).toBe(2)
    expect(result.stderr.trim()).toBe(
      'agent-state copy: the source and the destination are the same backend and namespace',
    )
  })
})
