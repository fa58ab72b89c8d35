import { randomBytes } from 'node:crypto'
import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  rmSync,
  statSync,
} from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { AgentStateError } from '@agent-state/core'
import Database from 'better-sqlite3'
import { toAgentStateError } from './errors.js'
import { MEMORY_PATH } from './options.js'
import { assertSupportedVersion, migrate, readSchemaVersion, SCHEMA_VERSION } from './schema.js'

/**
 * Opening a database file: create a missing one complete (schema and WAL
 * mode) under a temporary name and link it into place, so the path never
 * shows a half-made database; refuse an existing file that is not an
 * agent-state database, and a newer schema, before anything is written;
 * switch to WAL; migrate. Also the process-wide shared connection behind
 * `:memory:`. Every error of an open names the file.
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

/** The same error with the database file in its message and `context.path`. */
function naming(error: AgentStateError, file: string): AgentStateError {
  return new AgentStateError(error.code, `${error.message} (database file ${file})`, {
    context: { ...error.context, path: file },
    cause: error.cause,
    retryable: error.retryable,
  })
}

/**
 * Creates the database at `file` when it does not exist: initialised under a
 * temporary name in the same directory, closed (which folds its WAL into the
 * file), then hard-linked into place. The link fails if the path appeared
 * meanwhile (another process opening the same new file): theirs is used, and
 * it is complete for the same reason. On a file system without hard links
 * the file is copied into place instead (exclusive, but not atomic).
 * A crash in between can leave a `.<name>.<random>.creating` file behind:
 * harmless, safe to delete.
 */
function createDatabaseFile(file: string, settings: ConnectionSettings): void {
  if (existsSync(file)) return
  const temp = join(dirname(file), `.${basename(file)}.${randomBytes(6).toString('hex')}.creating`)
  try {
    closeSync(openSync(temp, 'wx', 0o600))
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'its directory does not exist' : 'the directory refused it'
    throw new AgentStateError(
      'UNAVAILABLE',
      `Cannot create the SQLite database file: ${why} (${code})`,
      { cause: error, retryable: false, context: { errno: code ?? null } },
    )
  }
  try {
    const db = new Database(temp)
    try {
      initialise(db, settings, true, true)
    } finally {
      db.close()
    }
    try {
      linkSync(temp, file)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code !== 'EEXIST') copyFileSync(temp, file, constants.COPYFILE_EXCL)
    }
    const directory = openSync(dirname(file), 'r')
    try {
      fsyncSync(directory)
    } finally {
      closeSync(directory)
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return
    throw toAgentStateError(error, { operation: 'create', mayHaveApplied: false })
  } finally {
    for (const leftover of [temp, `${temp}-wal`, `${temp}-shm`]) rmSync(leftover, { force: true })
  }
}

/**
 * Refuses an existing file that is not an agent-state database (no schema
 * version of ours: an empty file, or another application's SQLite database)
 * with `INCOMPATIBLE_SCHEMA`, before anything is written to it.
 */
function foreignDatabase(file: string): AgentStateError {
  const empty = statSync(file).size === 0
  return new AgentStateError(
    'INCOMPATIBLE_SCHEMA',
    empty
      ? 'The SQLite database file exists but is empty (zero bytes): it is not an agent-state database, and may be one that was truncated; it was left untouched'
      : 'The SQLite database file exists but is not an agent-state database (it has no agent-state schema version); it was left untouched',
    {
      context: {
        schemaVersion: null,
        supported: SCHEMA_VERSION,
        reason: empty ? 'empty' : 'foreign',
      },
    },
  )
}

function initialise(
  db: Database.Database,
  settings: ConnectionSettings,
  file: boolean,
  fresh: boolean,
): void {
  // Nothing may be written before the version check: a database from a newer
  // release must be left exactly as it is. Reading the schema is also what
  // detects a file that is not a database at all (SQLITE_NOTADB).
  const version = readSchemaVersion(db)
  if (version === 0 && !fresh) throw foreignDatabase(db.name)
  assertSupportedVersion(version)
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
  let db: Database.Database | undefined
  try {
    createDatabaseFile(file, settings)
    // fileMustExist: a file removed since is an error, never silently re-created empty.
    db = new Database(file, { timeout: settings.busyTimeoutMs, fileMustExist: true })
    initialise(db, settings, true, false)
  } catch (error) {
    db?.close()
    throw naming(toAgentStateError(error, { operation: 'open', mayHaveApplied: false }), file)
  }
  const opened = db
  return { db: opened, release: () => opened.close() }
}

function openSharedMemory(settings: ConnectionSettings): Connection {
  if (sharedMemory === undefined) {
    const db = new Database(MEMORY_PATH)
    try {
      initialise(db, settings, false, true)
    } catch (error) {
      db.close()
      throw toAgentStateError(error, { operation: 'open', mayHaveApplied: false })
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
