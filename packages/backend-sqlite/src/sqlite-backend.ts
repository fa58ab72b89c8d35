import { setTimeout as sleep } from 'node:timers/promises'
import {
  ABSENT_STATE,
  type AcquireLeaseOptions,
  AgentStateError,
  applyAcquire,
  applyDelete,
  applyPut,
  applyRelease,
  applyRenew,
  assertLeaseShape,
  assertValidKey,
  type Backend,
  type Capabilities,
  type Clock,
  CONTRACT_VERSION,
  checkAcquire,
  checkDelete,
  checkPut,
  collectListPage,
  type DeleteOptions,
  type KeyState,
  type Lease,
  type ListEntry,
  type ListOptions,
  type ListPage,
  liveLease,
  MAX_KEY_BYTES,
  metaOf,
  normalizeListOptions,
  type PutOptions,
  type StoredValue,
  systemClock,
  type ValueMeta,
} from '@agent-state/core'
import { openConnection } from './connection.js'
import { afterPosition, prefixRange } from './key-range.js'
import {
  DEFAULT_BUSY_TIMEOUT_MS,
  DEFAULT_MAX_VALUE_BYTES,
  MEMORY_PATH,
  type SqliteBackendOptions,
  sqliteOptionsSchema,
} from './options.js'
import { checkListed, decodeRow, encodeState } from './row-codec.js'
import { isBusy, toAgentStateError } from './sqlite-errors.js'
import { prepareStatements } from './statements.js'

/**
 * Creates a backend on a SQLite database file (better-sqlite3 12.x).
 *
 * Every mutating operation is one `BEGIN IMMEDIATE` transaction with no
 * `await` inside: read the key's row, apply core's pure transition rules,
 * write the row. The write lock makes compare-and-set, leases and fenced
 * writes atomic across every connection and process on the host. Many
 * namespaces share one file, isolated by the namespace column of the
 * primary key.
 *
 * Opening is synchronous and may block up to `busyTimeoutMs` while another
 * process holds the lock.
 *
 * @throws `INVALID_ARGUMENT` for bad options, `CORRUPT` when the file is not a
 *   valid database, `INCOMPATIBLE_SCHEMA` when a newer release wrote it
 *   (the file is left untouched), `UNAVAILABLE` when it cannot be opened.
 *
 * @example
 * ```ts
 * const backend = createSqliteBackend({ path: './state.db', namespace: 'agent-1' })
 * const meta = await backend.put('notes/today', new TextEncoder().encode('hello'))
 * await backend.put('notes/today', bytes, { ifMatch: meta.version })
 * ```
 */
export function createSqliteBackend(options: SqliteBackendOptions): Backend {
  const parsed = sqliteOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `Invalid sqlite backend options: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim(),
      { context: { issues: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`) } },
    )
  }
  const namespace = options.namespace ?? 'default'
  const clock: Clock = options.clock ?? systemClock
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS
  const inMemory = options.path === MEMORY_PATH
  const capabilities: Capabilities = {
    durable: !inMemory,
    multiProcess: !inMemory,
    multiHost: false,
    leaseClock: 'host',
    maxKeyBytes: MAX_KEY_BYTES,
    maxValueBytes: options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES,
  }
  const connection = openConnection(options.path, {
    synchronous: options.synchronous ?? 'FULL',
    busyTimeoutMs,
  })
  const { db } = connection
  let statements: ReturnType<typeof prepareStatements>
  try {
    statements = prepareStatements(db, namespace)
  } catch (error) {
    connection.release()
    throw toAgentStateError(error, 'open', false)
  }
  // One reusable IMMEDIATE transaction wrapper; the body is passed per call.
  const transaction = db.transaction((body: () => unknown): unknown => body())
  let closed = false

  function assertOpen(): void {
    if (closed) throw new AgentStateError('CLOSED', 'The sqlite backend is closed')
  }

  /**
   * Runs `body` (synchronous), waiting for locks in slices: SQLite's busy
   * handler blocks at most a slice, then this loop yields to the event loop
   * and tries again until `busyTimeoutMs` has passed. A busy failure rolled
   * everything back, so retrying is safe.
   */
  async function run<T>(operation: string, writing: boolean, body: () => T): Promise<T> {
    const deadline = performance.now() + busyTimeoutMs
    for (let attempt = 0; ; attempt++) {
      assertOpen()
      try {
        return writing ? (transaction.immediate(body) as T) : body()
      } catch (error) {
        const remaining = deadline - performance.now()
        if (!isBusy(error) || remaining <= 0) throw toAgentStateError(error, operation, writing)
      }
      const backoff = Math.min(2 ** Math.min(attempt, 4), 16) * (0.5 + Math.random())
      await sleep(Math.max(0, Math.min(backoff, deadline - performance.now())))
    }
  }

  function load(key: string): KeyState {
    const row = statements.select(key)
    return row === undefined ? ABSENT_STATE : decodeRow(key, row).state
  }

  /** Applies `step` to the key's state in one IMMEDIATE transaction and stores what it returns. */
  function update<T>(
    operation: string,
    key: string,
    step: (state: KeyState) => { next: KeyState | undefined; result: T },
  ): Promise<T> {
    return run(operation, true, () => {
      const { next, result } = step(load(key))
      if (next !== undefined) statements.upsert(key, encodeState(next))
      return result
    })
  }

  return {
    contractVersion: CONTRACT_VERSION,
    name: 'sqlite',
    capabilities,

    async get(key: string): Promise<StoredValue | null> {
      assertOpen()
      assertValidKey(key, MAX_KEY_BYTES)
      return run('get', false, () => {
        const state = load(key)
        const meta = metaOf(key, state)
        return meta === null ? null : { value: state.value, meta }
      })
    },

    async head(key: string): Promise<ValueMeta | null> {
      assertOpen()
      assertValidKey(key, MAX_KEY_BYTES)
      return run('head', false, () => {
        const row = statements.selectMeta(key)
        if (row === undefined) return null
        const { state, size } = decodeRow(key, row)
        const meta = metaOf(key, state)
        return meta === null ? null : { ...meta, size }
      })
    },

    async put(key: string, value: Uint8Array, putOptions?: PutOptions): Promise<ValueMeta> {
      assertOpen()
      const writer = checkPut(key, value, putOptions, capabilities)
      // No copy: the value is bound and written before this call returns control.
      return update('put', key, (state) => {
        const next = applyPut(key, state, value, writer, putOptions, clock())
        return { next, result: metaOf(key, next) as ValueMeta }
      })
    },

    async delete(key: string, deleteOptions?: DeleteOptions): Promise<boolean> {
      assertOpen()
      checkDelete(key, deleteOptions, MAX_KEY_BYTES)
      return update('delete', key, (state) => {
        const next = applyDelete(key, state, deleteOptions, clock())
        return { next, result: next !== undefined }
      })
    },

    async list(listOptions?: ListOptions): Promise<ListPage> {
      assertOpen()
      const normalized = normalizeListOptions(listOptions)
      const range = prefixRange(normalized.prefix)
      return collectListPage(normalized, async (position, max) => {
        const scanRange = range === null ? null : afterPosition(range, position)
        if (scanRange === null) return { entries: [], done: true }
        const rows = await run('list', false, () => statements.scan(scanRange, max))
        const entries: ListEntry[] = rows.map((row) => checkListed(row))
        return { entries, done: rows.length < max }
      })
    },

    async acquireLease(key: string, leaseOptions: AcquireLeaseOptions): Promise<Lease> {
      assertOpen()
      checkAcquire(key, leaseOptions, MAX_KEY_BYTES)
      return update('acquireLease', key, (state) => {
        const { state: next, lease } = applyAcquire(key, state, leaseOptions, clock())
        return { next, result: lease }
      })
    },

    async renewLease(lease: Lease): Promise<Lease> {
      assertOpen()
      assertLeaseShape(lease)
      assertValidKey(lease.key, MAX_KEY_BYTES)
      return update('renewLease', lease.key, (state) => {
        const { state: next, lease: renewed } = applyRenew(state, lease, clock())
        return { next, result: renewed }
      })
    },

    async releaseLease(lease: Lease): Promise<boolean> {
      assertOpen()
      assertLeaseShape(lease)
      assertValidKey(lease.key, MAX_KEY_BYTES)
      return update('releaseLease', lease.key, (state) => {
        const next = applyRelease(state, lease)
        return { next, result: next !== undefined }
      })
    },

    async getLease(key: string): Promise<Lease | null> {
      assertOpen()
      assertValidKey(key, MAX_KEY_BYTES)
      return run('getLease', false, () => {
        const row = statements.selectMeta(key)
        return row === undefined ? null : liveLease(key, decodeRow(key, row).state, clock())
      })
    },

    async destroy(): Promise<void> {
      assertOpen()
      await run('destroy', true, () => statements.destroy())
    },

    async close(): Promise<void> {
      if (closed) return
      closed = true
      connection.release()
    },
  }
}
