import { spawn } from 'node:child_process'
import { crc32 } from 'node:zlib'
import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import { startPostgresServer, startTcpProxy } from '@agent-state/test-services'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { MIGRATIONS_TABLE, openPostgresBackend, SCHEMA_VERSION } from '../src/index.js'
import {
  createWithHooks,
  OPEN_RETRIES,
  openWithHooks,
  type PostgresBackendHooks,
} from '../src/postgres-backend.js'
import { FENCED_PUT_FUNCTION } from '../src/schema-fenced-put.js'
import { PUT_FUNCTION } from '../src/schema-functions.js'

const server = await startPostgresServer()
afterAll(() => server.stop())

/** The migrations table of a database at {@link SCHEMA_VERSION}: every version, one a line. */
const EVERY_VERSION = Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1).join('\n')

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

/** Whether schema 1's live-key index exists in `schema` (read from the catalog: takes no lock on the table). */
async function liveIndexes(schema: string): Promise<string> {
  return server.sql(
    `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = '${schema}' AND c.relname = 'agent_state_entries_live'`,
  )
}

/** Opens `schema` with this release, which migrates it: every migration recorded, the live-key index gone. */
async function openMigrated(schema: string): Promise<Backend> {
  const backend = await openPostgresBackend({
    connectionString: server.url,
    schema,
    namespace: 'n',
  })
  expect(await recorded(schema)).toBe(EVERY_VERSION)
  expect(await liveIndexes(schema)).toBe('0\n')
  return backend
}

const KEYS = ['a', 'b', 'c/\u{1F600}', 'c/\uFFFF', 'z']

/**
 * A database as the first release left it (migrated to schema 1 only, as
 * `target: 1` does): values, and a tombstone (a leased key deleted: its row
 * kept for the fencing counter, without value, its lease released). The
 * rows are those that release wrote, inserted directly: this release reads
 * and writes through schema 3's functions, which schema 1 lacks.
 */
async function schemaOneDatabase(schema: string): Promise<void> {
  const old = await openWithHooks(
    { connectionString: server.url, schema, namespace: 'n' },
    { migration: { target: 1 } },
  )
  await old.close()
  const client = new pg.Client({ connectionString: server.url })
  await client.connect()
  try {
    for (const key of KEYS) {
      const value = Buffer.from(key)
      await client.query(
        `INSERT INTO ${schema}.agent_state_entries (namespace, key, version, revision, writer,
           updated_at, size, value, value_crc, fence)
         VALUES ('n', $1, '1.abcdefghABCDEFGH', 1, NULL, $2, $3, $4, $5, 0)`,
        [key, Date.now(), value.byteLength, value, crc32(value)],
      )
    }
    // The tombstone: put, leased (token 1), deleted under the lease, released.
    await client.query(
      `INSERT INTO ${schema}.agent_state_entries (namespace, key, version, revision, writer,
         updated_at, size, value, value_crc, fence)
       VALUES ('n', 'gone', NULL, 2, NULL, $1, 0, NULL, NULL, 1)`,
      [Date.now()],
    )
  } finally {
    await client.end()
  }
}

/**
 * Updates and HOT updates of 20 writes of the existing key `a` changing the
 * columns a put changes (the put function exists from schema 3 on, so a
 * schema 1 table is written directly), in one transaction rolled back: the
 * transaction's own counters, so no wait for the statistics of other sessions.
 */
async function hotUpdates(schema: string): Promise<{ updated: number; hot: number }> {
  const client = new pg.Client({ connectionString: server.url })
  await client.connect()
  try {
    const put = `UPDATE ${schema}.agent_state_entries SET version = $1, revision = revision + 1,
        writer = NULL, updated_at = $2, size = 1, value = $3, value_crc = 0,
        row_version = nextval('${schema}.agent_state_row_versions')
      WHERE namespace = 'n' AND key = 'a'`
    await client.query('BEGIN')
    for (let i = 0; i < 20; i++) {
      await client.query(put, [`${i + 2}.abcdefgh`, Date.now(), Buffer.from([i])])
    }
    const counts = await client.query<{ updated: number; hot: number }>(
      `SELECT pg_stat_get_xact_tuples_updated(c.oid)::int AS updated,
              pg_stat_get_xact_tuples_hot_updated(c.oid)::int AS hot
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relname = 'agent_state_entries'`,
      [schema],
    )
    await client.query('ROLLBACK')
    return counts.rows[0] as { updated: number; hot: number }
  } finally {
    await client.end()
  }
}

/**
 * A database as the previous release left it (migrated to schema 3, as
 * `target: 3` does; it wrote through migration 3's functions, as this
 * release's plain writes still do): values under `KEYS`, and a live lease on
 * `owner`, which it returns.
 */
async function schemaThreeDatabase(schema: string): Promise<Lease> {
  const old = await openWithHooks(
    { connectionString: server.url, schema, namespace: 'n' },
    { migration: { target: 3 } },
  )
  try {
    for (const key of KEYS) await old.put(key, new TextEncoder().encode(key))
    return await old.acquireLease('owner', { holder: 'h', ttlMs: 600_000 })
  } finally {
    await old.close()
  }
}

/** How many fenced put functions (migration 4) `schema` has, from the catalog. */
async function fencedPutFunctions(schema: string): Promise<string> {
  return server.sql(
    `SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname = '${schema}' AND p.proname = '${FENCED_PUT_FUNCTION}'`,
  )
}

/** The definition of migration 3's put function in `schema`, as PostgreSQL has it. */
async function putDefinition(schema: string): Promise<string> {
  return server.sql(`SELECT pg_get_functiondef('${schema}.${PUT_FUNCTION}'::regproc)`)
}

describe('migrations', () => {
  it('four processes starting on an empty database at once migrate it exactly once', async () => {
    const outputs = await concurrentStart('concurrent_start', 'slow')
    expect(outputs).toEqual(['ok', 'ok', 'ok', 'ok'])
    expect(await recorded('concurrent_start')).toBe(EVERY_VERSION)
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
    expect((error as Error).message).toContain(
      `schema version ${SCHEMA_VERSION + 1}; this version of @agent-state/postgres reads up to ${SCHEMA_VERSION}`,
    )
    expect(
      await server.sql('SELECT count(*), max(row_version) FROM newer.agent_state_entries'),
    ).toBe(before)
    expect(await recorded('newer')).toBe(`${EVERY_VERSION}\n${SCHEMA_VERSION + 1}`)
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
    expect(await recorded('half_applied')).toBe(EVERY_VERSION)
  }, 60_000)

  it('a schema-1 database migrates to the current schema: values, byte order and fencing kept, writes through the functions, every update HOT', async () => {
    await schemaOneDatabase('from_one')
    expect(await recorded('from_one')).toBe('1')
    expect(await liveIndexes('from_one')).toBe('1\n')
    const backend = await openMigrated('from_one')
    try {
      expect(
        await server.sql(
          "SELECT reloptions FROM pg_class WHERE oid = 'from_one.agent_state_entries'::regclass",
        ),
      ).toBe('{fillfactor=90}\n')
      // Byte order from the primary key: U+1F600 (F0 9F…) after U+FFFF (EF BF BF); the tombstone not listed.
      expect((await backend.list()).entries.map((entry) => entry.key)).toEqual([
        'a',
        'b',
        'c/\uFFFF',
        'c/\u{1F600}',
        'z',
      ])
      for (const key of KEYS) {
        expect(new TextDecoder().decode((await backend.get(key))?.value)).toBe(key)
      }
      expect(await backend.get('gone')).toBeNull()
      // The tombstone's fencing counter survived: the next token is above the first lease's.
      const lease = await backend.acquireLease('gone', { holder: 'h2', ttlMs: 60_000 })
      expect(lease.token).toBe(2)
      // Writes go through schema 3's functions, over the rows schema 1 wrote.
      const written = await backend.put('gone', new Uint8Array([5]), { lease })
      expect((await backend.get('gone'))?.meta.version).toBe(written.version)
      await expect(
        backend.put('gone', new Uint8Array([6]), { lease: { ...lease, token: 1 } }),
      ).rejects.toMatchObject({ code: 'LEASE_LOST' })
      expect(await backend.delete('z')).toBe(true)
      expect(await backend.get('z')).toBeNull()
    } finally {
      await backend.close()
    }
    expect(await hotUpdates('from_one')).toEqual({ updated: 20, hot: 20 })
  }, 60_000)

  it('mutant: on schema 1 (migration 2 not applied) the same puts are never HOT', async () => {
    await schemaOneDatabase('stays_one')
    expect(await hotUpdates('stays_one')).toEqual({ updated: 20, hot: 0 })
  }, 60_000)

  it('migration 2 killed halfway leaves schema 1 whole; the next start applies it', async () => {
    await schemaOneDatabase('half_two')
    const run = openInChild('half_two', 'now', 'hang')
    await run.paused
    // The index is dropped inside the open transaction: still there for everybody else.
    expect(await liveIndexes('half_two')).toBe('1\n')
    run.kill()
    await run.output
    expect(await recorded('half_two')).toBe('1')
    expect(await liveIndexes('half_two')).toBe('1\n')
    const backend = await openMigrated('half_two')
    try {
      expect(new TextDecoder().decode((await backend.get('b'))?.value)).toBe('b')
    } finally {
      await backend.close()
    }
  }, 60_000)

  it('a schema-3 database (the previous release) migrates to 4: the fenced put added, agent_state_put unchanged, values and leases kept', async () => {
    const lease = await schemaThreeDatabase('from_three')
    expect(await recorded('from_three')).toBe('1\n2\n3')
    expect(await fencedPutFunctions('from_three')).toBe('0\n')
    const plainPut = await putDefinition('from_three')
    const backend = await openMigrated('from_three')
    try {
      expect(await fencedPutFunctions('from_three')).toBe('1\n')
      // Migration 4 adds a function and touches nothing else: the plain put is migration 3's.
      expect(await putDefinition('from_three')).toBe(plainPut)
      expect(new TextDecoder().decode((await backend.get('a'))?.value)).toBe('a')
      // The lease taken before the migration fences a write after it.
      expect(await backend.getLease('owner')).toEqual(lease)
      await backend.put('a', new Uint8Array([2]), { fence: lease })
      expect((await backend.get('a'))?.value).toEqual(new Uint8Array([2]))
      await expect(
        backend.put('a', new Uint8Array([3]), { fence: { ...lease, token: lease.token + 1 } }),
      ).rejects.toMatchObject({ code: 'LEASE_LOST' })
      expect((await backend.get('a'))?.value).toEqual(new Uint8Array([2]))
    } finally {
      await backend.close()
    }
  }, 60_000)

  it('migration 4 killed halfway leaves schema 3 whole; the next start applies it', async () => {
    await schemaThreeDatabase('half_four')
    const run = openInChild('half_four', 'now', 'hang')
    await run.paused
    // The function is created inside the open transaction: nobody else sees it yet.
    expect(await fencedPutFunctions('half_four')).toBe('0\n')
    run.kill()
    await run.output
    expect(await recorded('half_four')).toBe('1\n2\n3')
    expect(await fencedPutFunctions('half_four')).toBe('0\n')
    const backend = await openMigrated('half_four')
    try {
      expect(await fencedPutFunctions('half_four')).toBe('1\n')
      expect(new TextDecoder().decode((await backend.get('b'))?.value)).toBe('b')
    } finally {
      await backend.close()
    }
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

/**
 * The first operation of a backend created through a TCP proxy on an empty
 * `schema`, whose first migration attempt loses every connection right after
 * migration 1's DDL (inside the transaction, before anything was recorded):
 * resolves to the operation's error code (`undefined`: it succeeded) and
 * the attempts made.
 */
async function openCutOnce(
  schema: string,
  hooks: PostgresBackendHooks,
): Promise<{ code: string | undefined; attempts: number; accepted: number }> {
  const proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: server.port } })
  let attempts = 0
  let cut = false
  const backend = createWithHooks(
    { connectionString: server.url.replace(`:${server.port}/`, `:${proxy.port}/`), schema },
    {
      ...hooks,
      onOpenAttempt: () => {
        attempts++
      },
      migration: {
        afterMigration: async () => {
          if (cut) return
          cut = true
          proxy.dropAll()
          // Let the reset reach the client before the transaction's next statement.
          await new Promise((resolve) => setTimeout(resolve, 50))
        },
      },
    },
  )
  try {
    const code = await backend.put('first', new Uint8Array([1])).then(
      () => undefined,
      (error: unknown) => (isAgentStateError(error) ? error.code : String(error)),
    )
    return { code, attempts, accepted: proxy.accepted }
  } finally {
    await backend.close()
    await proxy.stop()
  }
}

describe('open: the migration step after a lost connection', () => {
  it('is retried on a fresh connection: the first operation succeeds, migrated once', async () => {
    const { code, attempts, accepted } = await openCutOnce('cut_once', {})
    expect(code).toBeUndefined()
    expect(attempts).toBe(2)
    // The cut connection was discarded: the retry opened another.
    expect(accepted).toBeGreaterThanOrEqual(2)
    expect(await recorded('cut_once')).toBe(EVERY_VERSION)
    expect(await server.sql('SELECT count(*) FROM cut_once.agent_state_entries')).toBe('1\n')
  }, 60_000)

  it('mutant: without the retry the first operation fails with UNAVAILABLE, nothing migrated', async () => {
    const { code, attempts } = await openCutOnce('cut_no_retry', { openRetries: 0 })
    expect(code).toBe('UNAVAILABLE')
    expect(attempts).toBe(1)
    expect(
      await server.sql("SELECT count(*) FROM pg_namespace WHERE nspname = 'cut_no_retry'"),
    ).toBe('0\n')
  }, 60_000)

  it(`gives up after ${OPEN_RETRIES} retries when every attempt loses its connection`, async () => {
    const proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: server.port } })
    let attempts = 0
    const error = await openWithHooks(
      {
        connectionString: server.url.replace(`:${server.port}/`, `:${proxy.port}/`),
        schema: 'cut_always',
      },
      {
        onOpenAttempt: () => {
          attempts++
        },
        migration: {
          afterMigration: async () => {
            proxy.dropAll()
            await new Promise((resolve) => setTimeout(resolve, 50))
          },
        },
      },
    ).then(
      () => undefined,
      (caught: unknown) => caught,
    )
    await proxy.stop()
    expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
    expect((error as Error).message).toContain('Could not open the PostgreSQL backend')
    expect(attempts).toBe(1 + OPEN_RETRIES)
  }, 60_000)
})

describe('open: a refusal of the migration step is never retried', () => {
  /** Opens `schema` as `url`'s role, counting the migration attempts. */
  async function refusedOpen(
    url: string,
    schema: string,
    hooks: PostgresBackendHooks = {},
  ): Promise<{ error: unknown; attempts: number }> {
    let attempts = 0
    const error = await openWithHooks(
      { connectionString: url, schema },
      {
        ...hooks,
        onOpenAttempt: () => {
          attempts++
        },
      },
    ).then(
      () => undefined,
      (caught: unknown) => caught,
    )
    return { error, attempts }
  }

  it('INCOMPATIBLE_SCHEMA: one attempt', async () => {
    const first = await openPostgresBackend({
      connectionString: server.url,
      schema: 'refused_newer',
    })
    await first.close()
    await server.sql(
      `INSERT INTO refused_newer.${MIGRATIONS_TABLE} (version, description) VALUES (${SCHEMA_VERSION + 1}, 'from the future')`,
    )
    const { error, attempts } = await refusedOpen(server.url, 'refused_newer')
    expect(isAgentStateError(error, 'INCOMPATIBLE_SCHEMA')).toBe(true)
    expect(attempts).toBe(1)
  }, 60_000)

  // A role without CREATE on the database cannot create the schema (42501).
  const noCreate = async () => {
    await server.sql(
      "DO $$ BEGIN CREATE ROLE agent_state_no_create LOGIN PASSWORD 'no-create'; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
    )
    return server.urlFor('agent_state_no_create', 'no-create')
  }

  it('a missing privilege: UNAVAILABLE (42501) after one attempt', async () => {
    const { error, attempts } = await refusedOpen(await noCreate(), 'refused_privilege')
    expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
    expect((error as { context?: { sqlState?: string } }).context?.sqlState).toBe('42501')
    expect(attempts).toBe(1)
  }, 60_000)

  /** A migration step that throws our own TypeError inside its transaction (a bug). */
  const buggy = (hooks: PostgresBackendHooks = {}): PostgresBackendHooks => ({
    ...hooks,
    migration: {
      afterMigration: async () => {
        throw new TypeError("Cannot read properties of undefined (reading 'version')")
      },
    },
  })

  it('a bug inside the migration step: UNAVAILABLE, not retryable, the TypeError its cause, after one attempt', async () => {
    const { error, attempts } = await refusedOpen(server.url, 'refused_bug', buggy())
    expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
    expect((error as { retryable?: boolean }).retryable).toBe(false)
    let cause: unknown = error
    while (cause instanceof Error && cause.cause !== undefined) cause = cause.cause
    expect(cause).toBeInstanceOf(TypeError)
    expect(attempts).toBe(1)
  }, 60_000)

  it('mutant: a bug taken for a lost connection is retried (1 + OPEN_RETRIES attempts) and reported retryable', async () => {
    const { error, attempts } = await refusedOpen(
      server.url,
      'refused_bug_as_lost',
      buggy({ errorMapping: { unexpectedAsLost: true } }),
    )
    expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
    expect((error as { retryable?: boolean }).retryable).toBe(true)
    expect(attempts).toBe(1 + OPEN_RETRIES)
  }, 60_000)

  it('mutant: retrying refusals makes the same open take 1 + OPEN_RETRIES attempts', async () => {
    const { error, attempts } = await refusedOpen(await noCreate(), 'refused_privilege', {
      retryRefusals: true,
    })
    expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
    expect(attempts).toBe(1 + OPEN_RETRIES)
  }, 60_000)
})
