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
