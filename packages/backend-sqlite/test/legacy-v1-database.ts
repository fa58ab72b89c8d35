import { randomBytes } from 'node:crypto'
import Database from 'better-sqlite3'

/**
 * Writes a database exactly as @agent-state/sqlite 0.1 (schema version 1,
 * no integrity checks) left it: its layout, verbatim, and rows in its column
 * format. Used to test the upgrade to version 2.
 */

const V1_LAYOUT = `CREATE TABLE agent_state_meta (
     name TEXT PRIMARY KEY NOT NULL,
     value INTEGER NOT NULL
   ) STRICT;
   CREATE TABLE agent_state_entries (
     namespace TEXT NOT NULL COLLATE BINARY,
     key TEXT NOT NULL COLLATE BINARY,
     version TEXT,
     revision INTEGER NOT NULL,
     writer TEXT,
     updated_at REAL NOT NULL,
     size INTEGER NOT NULL,
     value BLOB,
     lease_holder TEXT,
     lease_token INTEGER,
     lease_ttl_ms INTEGER,
     lease_expires_at REAL,
     fence INTEGER NOT NULL,
     PRIMARY KEY (namespace, key)
   ) STRICT;
   CREATE INDEX agent_state_entries_live ON agent_state_entries (namespace, key, version, size, updated_at)
     WHERE version IS NOT NULL;`

/** One row of a version 1 database. */
export interface V1Row {
  readonly namespace: string
  readonly key: string
  /** `null` for a deleted key. */
  readonly version: string | null
  readonly revision: number
  /** The writer's JSON text, as 0.1 stored it. */
  readonly writer: string | null
  readonly updatedAt: number
  readonly value: Uint8Array | null
  readonly lease: { holder: string; token: number; ttlMs: number; expiresAt: number } | null
  readonly fence: number
}

/** Creates `path` as a version 1 database holding `rows` (WAL mode, as 0.1 left it). */
export function writeV1Database(path: string, rows: readonly V1Row[]): void {
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.exec(V1_LAYOUT)
  db.prepare("INSERT INTO agent_state_meta (name, value) VALUES ('schema_version', 1)").run()
  const insert = db.prepare(
    `INSERT INTO agent_state_entries (namespace, key, version, revision, writer, updated_at, size, value,
       lease_holder, lease_token, lease_ttl_ms, lease_expires_at, fence)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  for (const row of rows) {
    insert.run(
      row.namespace,
      row.key,
      row.version,
      row.revision,
      row.writer,
      row.updatedAt,
      row.value?.byteLength ?? 0,
      row.value,
      row.lease?.holder ?? null,
      row.lease?.token ?? null,
      row.lease?.ttlMs ?? null,
      row.lease?.expiresAt ?? null,
      row.fence,
    )
  }
  db.close()
}

/** The value of the sample row `big`: larger than a page. */
export const V1_BIG_VALUE = randomBytes(6000)

/**
 * Sample rows of a version 1 database: a live key with a writer, one larger
 * than a page, a deleted key, a leased key whose writer text is not in the
 * key order this package writes, and a key of another namespace.
 */
export const V1_SAMPLE_ROWS: readonly V1Row[] = [
  {
    namespace: 'ns',
    key: 'a',
    version: 'v-a',
    revision: 3,
    writer: '{"sessionId":"s","writerId":"w"}',
    updatedAt: 1_700_000_000_123.5,
    value: new Uint8Array([1, 2, 3]),
    lease: null,
    fence: 0,
  },
  {
    namespace: 'ns',
    key: 'big',
    version: 'v-big',
    revision: 1,
    writer: null,
    updatedAt: 1_700_000_000_200,
    value: V1_BIG_VALUE,
    lease: null,
    fence: 0,
  },
  {
    namespace: 'ns',
    key: 'deleted',
    version: null,
    revision: 2,
    writer: null,
    updatedAt: 1_700_000_000_300,
    value: null,
    lease: null,
    fence: 4,
  },
  {
    namespace: 'ns',
    key: 'leased',
    version: 'v-l',
    revision: 1,
    // Not the key order this package writes: a row check must cover the stored text.
    writer: '{"workerId":"k","writerId":"w"}',
    updatedAt: 1_700_000_000_400,
    value: new Uint8Array([9]),
    lease: { holder: 'h', token: 5, ttlMs: 60_000, expiresAt: Date.now() + 3_600_000 },
    fence: 5,
  },
  {
    namespace: 'other',
    key: 'a',
    version: 'v-o',
    revision: 1,
    writer: null,
    updatedAt: 1_700_000_000_500,
    value: new Uint8Array([7]),
    lease: null,
    fence: 0,
  },
]
