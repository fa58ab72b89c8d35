import { closeSync, openSync } from 'node:fs'
import { resolve } from 'node:path'
import { AgentStateError } from '@agent-state/core'
import Database from 'better-sqlite3'
import { MEMORY_PATH } from './options.js'
import { assertSupportedVersion, migrate, readSchemaVersion } from './schema.js'
import { toAgentStateError } from './sqlite-errors.js'

/**
 * Opening a database file: create it `0600`, refuse a newer schema before
 * anything is written, switch to WAL, migrate. Also the process-wide shared
 * connection behind `:memory:`.
 */

/** The longest SQLite's own busy handler sleeps in one go; the backend yields between such slices. */
export const BUSY_SLICE_MS = 25

/** Settings applied to every connection. */
export interface ConnectionSettings {
  readonly synchronous: 'FULL' | 'NORMAL'
  readonly busyTimeoutMs: number
}

/** An open connection and how to let go of it. */
export interface Connection {
  readonly db: Database.Database
  /** Closes the connection (or drops one reference to the shared in-memory one). */
  release(): void
}

let sharedMemory: { db: Database.Database; references: number } | undefined

function createMode0600(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return
    throw new AgentStateError(
      'UNAVAILABLE',
      `Cannot create the SQLite database file (${(error as NodeJS.ErrnoException).code})`,
      { cause: error, retryable: false },
    )
  }
}

function initialise(db: Database.Database, settings: ConnectionSettings, file: boolean): void {
  // Nothing may be written before the version check: a database from a newer
  // release must be left exactly as it is. Reading the schema is also what
  // detects a file that is not a database at all (SQLITE_NOTADB).
  assertSupportedVersion(readSchemaVersion(db))
  const encoding = db.pragma('encoding', { simple: true })
  if (encoding !== 'UTF-8') {
    // BINARY collation compares the stored encoding's bytes; only UTF-8 gives byte order.
    throw new AgentStateError(
      'INCOMPATIBLE_SCHEMA',
      `The SQLite database uses the ${String(encoding)} text encoding; agent-state needs UTF-8 for byte-ordered listing`,
      { context: { encoding: String(encoding) } },
    )
  }
  if (file) {
    const mode = db.pragma('journal_mode = WAL', { simple: true })
    if (mode !== 'wal') {
      throw new AgentStateError(
        'UNAVAILABLE',
        `SQLite refused WAL mode (journal_mode is ${String(mode)})`,
        {
          retryable: false,
        },
      )
    }
  }
  db.pragma(`synchronous = ${settings.synchronous}`)
  migrate(db)
  db.pragma(`busy_timeout = ${Math.min(settings.busyTimeoutMs, BUSY_SLICE_MS)}`)
}

/**
 * Opens (creating when missing) the database at `path`. Blocks while it
 * waits for another process's lock, up to `busyTimeoutMs`.
 *
 * @throws `CORRUPT` for a file that is not a valid database,
 *   `INCOMPATIBLE_SCHEMA` for a newer schema, `UNAVAILABLE` otherwise.
 */
export function openConnection(path: string, settings: ConnectionSettings): Connection {
  if (path === MEMORY_PATH) return openSharedMemory(settings)
  const file = resolve(path)
  createMode0600(file)
  let db: Database.Database | undefined
  try {
    db = new Database(file, { timeout: settings.busyTimeoutMs })
    initialise(db, settings, true)
  } catch (error) {
    db?.close()
    throw toAgentStateError(error, 'open', false)
  }
  const opened = db
  return { db: opened, release: () => opened.close() }
}

function openSharedMemory(settings: ConnectionSettings): Connection {
  if (sharedMemory === undefined) {
    const db = new Database(MEMORY_PATH)
    try {
      initialise(db, settings, false)
    } catch (error) {
      db.close()
      throw toAgentStateError(error, 'open', false)
    }
    sharedMemory = { db, references: 0 }
  }
  const shared = sharedMemory
  shared.references++
  let released = false
  return {
    db: shared.db,
    release() {
      if (released) return
      released = true
      shared.references--
      if (shared.references === 0) {
        shared.db.close()
        if (sharedMemory === shared) sharedMemory = undefined
      }
    },
  }
}
