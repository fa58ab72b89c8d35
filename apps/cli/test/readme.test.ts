import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openBackend } from '@agent-state/core'
import { type ReadmeBlock, readmeBlocks, runCommand } from '@agent-state/readme-blocks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { importBackendPackage } from '../src/backend-importer.js'
import { type CliResult, removeTemps, runCli, runScript, tempDir } from './cli-process.js'
import { s3Env, services } from './services.js'
import { agentStateArgs, type ShellLine, shellLines } from './shell-line.js'

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url))
const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const BLOCKS = readmeBlocks(join(PACKAGE_DIR, 'README.md'))

/** The `sh` block under a heading, as command lines. */
function linesUnder(heading: string): ShellLine[] {
  const block = BLOCKS.find((b: ReadmeBlock) => b.heading === heading)
  if (block === undefined) throw new Error(`no block under ${heading}`)
  return shellLines(block.code)
}

/** The README's words, with exact replacements (each must occur, or the README changed). */
function substitute(args: readonly string[], replacements: Record<string, string>): string[] {
  const text = JSON.stringify(args)
  for (const from of Object.keys(replacements))
    if (!text.includes(from)) throw new Error(`the command no longer contains ${from}`)
  return args.map((arg) =>
    Object.entries(replacements).reduce((out, [from, to]) => out.replaceAll(from, to), arg),
  )
}

function expectOk(result: CliResult, what: string): void {
  expect(`${what}: exit ${result.status} ${result.stderr}`).toBe(`${what}: exit 0 `)
}

// Every block of the CLI README is an `sh` block of `agent-state` command lines. Each line runs
// here as the other tests run the CLI (`runCli`: `node bin/agent-state.js …`, what
// `npx -y pnpm@12.4.2 agent-state …` runs), in a temp directory holding the state the examples
// talk about, except the few whose run is another test's (named at each) or needs a live
// deployment (run up to the point where the deployment is needed).
describe('the CLI README', () => {
  let cwd: string
  beforeAll(async () => {
    cwd = tempDir('agent-state-cli-readme-')
    const seeded = await runScript('./seed-readme-state.ts', [
      `file:${join(cwd, '.agent-state')}`,
      `sqlite:${join(cwd, 'state.db')}`,
    ])
    expect(seeded.stderr).toBe('')
    expect(seeded.status).toBe(0)
  })
  afterAll(removeTemps)

  it('has exactly the sh blocks this test runs', () => {
    expect(BLOCKS.map((b) => [b.language, b.flags, b.heading])).toEqual([
      ['sh', [], '# @agent-state/cli'],
      ['sh', [], '## Commands'],
      ['sh', [], '## `agent-state demo [url]`'],
      ['sh', [], '## `quarantine`'],
      ['sh', [], '## `copy <from-url> <to-url>`'],
      ['sh', [], '## `verify [url] [--json file]`'],
      ['sh', [], '## Third-party backends: `--module <path-or-package>`'],
    ])
  })

  it('the checkout commands work from the repository root, through pnpm and without', async () => {
    const [help, commandHelp] = linesUnder('# @agent-state/cli')
    expect(help?.comment).toBe('or: node apps/cli/bin/agent-state.js --help')
    // This one line runs literally (npx, pnpm 12.4.2, the root `agent-state` script): the rest
    // of the README uses the CLI as runCli runs it.
    const [viaPnpm, viaNode, demoHelp] = await Promise.all([
      runCommand(help?.argv ?? [], { cwd: REPO_ROOT, timeoutMs: 120_000 }),
      runCommand(help?.comment.replace(/^or: /, '').split(' ') ?? [], { cwd: REPO_ROOT }),
      // `<command>`: one of them; usage-errors.test.ts runs `--help` of every command.
      runCli(substitute(agentStateArgs(commandHelp as ShellLine), { '<command>': 'demo' })),
    ])
    expect(viaPnpm.exitCode).toBe(0)
    expect(viaPnpm.stdout).toContain('Usage: agent-state [options] [command]')
    expect(viaNode).toMatchObject({ exitCode: 0, stderr: '' })
    expect(viaNode.stdout.startsWith('Usage: agent-state [options] [command]')).toBe(true)
    expect(demoHelp.status).toBe(0)
    expect(demoHelp.stdout.startsWith('Usage: agent-state demo')).toBe(true)
  })

  it('the inspection examples show what their comments say', async () => {
    const lines = linesUnder('## Commands')
    expect(lines).toHaveLength(6)
    const results = await Promise.all(lines.map((line) => runCli(agentStateArgs(line), { cwd })))
    lines.forEach((line, index) => {
      expectOk(results[index] as CliResult, line.argv.join(' '))
    })
    const [ls, lsLong, sessions, workers, stat, cat] = results as CliResult[]
    const words = (text = '') => text.replace(/\s+/g, ' ').trim()
    expect(words(ls?.stdout)).toBe(words(lines[0]?.comment)) // PRE sessions/  PRE workers/
    expect(lsLong?.stdout).toMatch(/sessions\/review-42\/data\/plan\.md\n/)
    const jq = spawnSync(lines[2]?.pipeTo?.[0] ?? '', lines[2]?.pipeTo?.slice(1) ?? [], {
      input: sessions?.stdout,
      encoding: 'utf8',
    })
    expect(jq.status).toBe(0)
    expect(JSON.parse(jq.stdout)).toMatchObject({
      sessionId: 'review-42',
      handoff: { state: 'present' },
    })
    expect(words(workers?.stdout.split('\n')[0])).toBe(words(lines[3]?.comment)) // the header
    expect(workers?.stdout).toMatch(/\nw1 +suspended /)
    expect(stat?.stdout).toContain('workers/w1/snapshot.json')
    // `> plan.md`: the bytes as stored.
    expect(lines[5]?.redirectTo).toBe('plan.md')
    expect(cat?.stdout).toBe('# Plan\n- inspect PR')
  })

  it('the quarantine examples move the corrupt snapshot and the handoff aside, and list both', async () => {
    // Worker w-7's snapshot is damaged only now: the listings above must exit 0.
    const backend = await openBackend(`file:${join(cwd, '.agent-state')}`, {
      importer: importBackendPackage,
    })
    await backend.put('workers/w-7/snapshot.json', new TextEncoder().encode('{"not":"a snapshot"}'))
    await backend.close()
    const [worker, key, list] = linesUnder('## `quarantine`').map(agentStateArgs)
    const [moved, keyed] = await Promise.all([
      runCli(worker ?? [], { cwd }),
      runCli(key ?? [], { cwd }),
    ])
    expectOk(moved, 'quarantine worker')
    expect(moved.stdout).toContain('SNAPSHOT_CORRUPT')
    expectOk(keyed, 'quarantine key')
    expect(JSON.parse(keyed.stdout)).toMatchObject({ key: 'sessions/review-42/handoff.json' })
    const listed = await runCli(list ?? [], { cwd })
    expectOk(listed, 'quarantine list')
    expect(listed.stdout.trimEnd().split('\n')).toHaveLength(2)
  })

  it('the copy examples plan, copy and check, into the real redis-server and SQLite', async () => {
    const { host, port, password } = services().redis
    // The README's Redis is the test server (its own database 7, which no other test uses).
    const redis = { ':pw@redis.internal:6379/0': `default:${password}@${host}:${port}/7` }
    const [plan, copy, toSqlite] = linesUnder('## `copy <from-url> <to-url>`')
    const [planned, sqlite] = await Promise.all([
      runCli(substitute(agentStateArgs(plan as ShellLine), redis), { cwd }),
      runCli(agentStateArgs(toSqlite as ShellLine), { cwd }),
    ])
    expectOk(planned, 'copy --dry-run')
    expect(planned.stdout).toContain('workers/w1/snapshot.json')
    expectOk(sqlite, 'copy --prefix sessions/ --jsonl')
    const copied = await runCli(substitute(agentStateArgs(copy as ShellLine), redis), { cwd })
    expectOk(copied, 'copy')
    const rows = sqlite.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { key?: string; action?: string })
      .filter((row) => row.key !== undefined)
    expect(rows.map((row) => row.key)).toContain('sessions/review-42/data/plan.md')
    expect(rows.every((row) => row.action === 'created')).toBe(true)
  })

  it('the demo runs on SQLite as written', async () => {
    const [embedded, onSqlite] = linesUnder('## `agent-state demo [url]`').map(agentStateArgs)
    // `demo` on the embedded default is demo.test.ts's (in a real terminal, then inspected).
    expect(embedded).toEqual(['demo'])
    expect(readFileSync(join(PACKAGE_DIR, 'test', 'demo.test.ts'), 'utf8')).toMatch(
      /\$\{BIN\} demo;/,
    )
    const result = await runCli(onSqlite ?? [], { cwd })
    expectOk(result, 'demo sqlite:./state.db')
  })

  it('the verify examples reach their backend as written', async () => {
    const [embedded, onSqlite, onRedis, onS3] = linesUnder('## `verify [url] [--json file]`').map(
      agentStateArgs,
    )
    // A whole verify run is the contract suite with every tier (minutes): verify.test.ts runs it
    // on the embedded default (this first line) and on S3; backend-sqlite's own tests run the
    // same suite on SQLite. Here each URL is opened up to the preflight, against the real
    // servers where a deployment would be: the Redis line's user and password and the S3
    // line's bucket do not exist there, so each must stop with one line, exit 3.
    expect(embedded).toEqual(['verify'])
    expect(onSqlite).toEqual(['verify', 'sqlite:./state.db'])
    const { host, port } = services().redis
    const endpoint = services().s3.endpoint
    const [redis, s3] = await Promise.all([
      runCli(substitute(onRedis ?? [], { '10.0.0.5:6379': `${host}:${port}` }), { cwd }),
      runCli(substitute(onS3 ?? [], { 'http://127.0.0.1:7480': endpoint }), {
        cwd,
        env: s3Env(),
      }),
    ])
    expect([redis.status, redis.stderr.trimEnd().split('\n')]).toEqual([
      3,
      [
        expect.stringMatching(
          /^agent-state verify: redis:\/\/\*\*\*@127\.0\.0\.1:\d+\/0: UNAVAILABLE: .*authentication failed/,
        ),
      ],
    ])
    expect(redis.stderr).not.toContain('password@')
    expect([s3.status, s3.stderr.trimEnd().split('\n')]).toEqual([
      3,
      [expect.stringMatching(/^agent-state verify: .*bucket/i)],
    ])
  })

  it('the --module examples open a third-party backend as written', async () => {
    const [verifyLine, lsLine] = linesUnder('## Third-party backends: `--module <path-or-package>`')
    // The verify line is a whole contract run (minutes): third-party-module.test.ts runs it on
    // a real module file. Here its words are checked, and the ls line runs with the package
    // replaced by that module file and the scheme by the one it serves.
    expect(verifyLine?.comment).toBe('or: AGENT_STATE_MODULE=./my-backend.ts')
    expect(agentStateArgs(verifyLine as ShellLine)).toEqual([
      '--module',
      './my-backend.ts',
      'verify',
      'lmdb:./data',
    ])
    const module = fileURLToPath(new URL('./fixtures/third-party-backend.ts', import.meta.url))
    const result = await runCli(
      substitute(agentStateArgs(lsLine as ShellLine), {
        '@acme/agent-state-lmdb': module,
        'lmdb:./data': 'thirdparty:',
      }),
      { cwd },
    )
    expectOk(result, 'ls through --module')
  })
})
