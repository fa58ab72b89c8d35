import { spawn } from 'node:child_process'
import { isAgentStateError } from '@agent-state/core'
import { startPostgresServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { MIGRATIONS_TABLE, openPostgresBackend, SCHEMA_VERSION } from '../src/index.js'

const server = await startPostgresServer()
afterAll(() => server.stop())

const CHILD = new URL('./open-child.ts', import.meta.url).pathname

interface ChildRun {
  readonly output: Promise<string>
  readonly kill: () => void
  readonly ready: Promise<void>
  readonly paused: Promise<void>
  readonly go: () => void
}

function openInChild(schema: string, start: 'wait' | 'now', mode: string): ChildRun {
  const child = spawn(
    process.execPath,
    ['--conditions=@agent-state/source', '--import', 'tsx', CHILD, server.url, schema, start, mode],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  )
  let text = ''
  let onPaused: () => void = () => {}
  let onReady: () => void = () => {}
  const paused = new Promise<void>((resolve) => {
    onPaused = resolve
  })
  const ready = new Promise<void>((resolve) => {
    onReady = resolve
  })
  child.stdout.on('data', (chunk: Buffer) => {
    text += chunk.toString()
    if (text.includes('paused')) onPaused()
    if (text.includes('ready')) onReady()
  })
  return {
    output: new Promise((resolve) =>
      child.once('exit', () => resolve(text.replace('ready\n', '').trim())),
    ),
    kill: () => child.kill('SIGKILL'),
    ready,
    paused,
    go: () => child.stdin?.end('go\n'),
  }
}

async function recorded(schema: string): Promise<string> {
  return (
    await server.sql(`SELECT version FROM ${schema}.${MIGRATIONS_TABLE} ORDER BY version`)
  ).trim()
}

/** Four processes opening an empty schema at the same moment, each holding its migration 500 ms. */
async function concurrentStart(schema: string, mode: string): Promise<string[]> {
  const runs = [0, 1, 2, 3].map(() => openInChild(schema, 'wait', mode))
  await Promise.all(runs.map((run) => run.ready))
  for (const run of runs) run.go()
  return Promise.all(runs.map((run) => run.output))
}

describe('migrations', () => {
  it('four processes starting on an empty database at once migrate it exactly once', async () => {
    const outputs = await concurrentStart('concurrent_start', 'slow')
    expect(outputs).toEqual(['ok', 'ok', 'ok', 'ok'])
    expect(await recorded('concurrent_start')).toBe(String(SCHEMA_VERSION))
  }, 60_000)

  it('mutant: without the advisory lock, the same start fails', async () => {
    const outputs = await concurrentStart('concurrent_mutant', 'no-lock')
    // Processes that raced the first migration fail (duplicate schema or table): the lock is what prevents it.
    expect(outputs.filter((output) => output !== 'ok').length).toBeGreaterThan(0)
  }, 60_000)

  it('a database at a newer schema version is refused and left untouched', async () => {
    const url = server.url
    const first = await openPostgresBackend({
      connectionString: url,
      schema: 'newer',
      namespace: 'n',
    })
    await first.put('k', new Uint8Array([7]))
    await first.close()
    await server.sql(
      `INSERT INTO newer.${MIGRATIONS_TABLE} (version, description) VALUES (${SCHEMA_VERSION + 1}, 'from the future')`,
    )
    const before = await server.sql(
      'SELECT count(*), max(row_version) FROM newer.agent_state_entries',
    )
    const error = await openPostgresBackend({ connectionString: url, schema: 'newer' }).then(
      () => undefined,
      (caught: unknown) => caught,
    )
    expect(isAgentStateError(error, 'INCOMPATIBLE_SCHEMA')).toBe(true)
    expect((error as Error).message).toMatch(
      /schema version 2; this version of @agent-state\/postgres reads up to 1/,
    )
    expect(
      await server.sql('SELECT count(*), max(row_version) FROM newer.agent_state_entries'),
    ).toBe(before)
    expect(await recorded('newer')).toBe(`1\n${SCHEMA_VERSION + 1}`)
  }, 60_000)

  it('a migration killed halfway is rolled back whole and applied by the next start', async () => {
    const run = openInChild('half_applied', 'now', 'hang')
    await run.paused
    // The DDL ran inside the open transaction: visible to nobody yet.
    expect(
      await server.sql("SELECT count(*) FROM pg_namespace WHERE nspname = 'half_applied'"),
    ).toBe('0\n')
    run.kill()
    await run.output
    const backend = await openPostgresBackend({
      connectionString: server.url,
      schema: 'half_applied',
      namespace: 'n',
    })
    await backend.put('after', new Uint8Array([1]))
    expect((await backend.get('after'))?.value).toEqual(new Uint8Array([1]))
    await backend.close()
    expect(await recorded('half_applied')).toBe(String(SCHEMA_VERSION))
  }, 60_000)

  it('a schema with the entries table but no migrations record is refused', async () => {
    await server.sql(
      'CREATE SCHEMA foreign_one; CREATE TABLE foreign_one.agent_state_entries (x int)',
    )
    const error = await openPostgresBackend({
      connectionString: server.url,
      schema: 'foreign_one',
    }).then(
      () => undefined,
      (caught: unknown) => caught,
    )
    expect(isAgentStateError(error, 'INCOMPATIBLE_SCHEMA')).toBe(true)
    expect(
      await server.sql("SELECT to_regclass('foreign_one.agent_state_migrations') IS NULL"),
    ).toBe('t\n')
  }, 60_000)
})
