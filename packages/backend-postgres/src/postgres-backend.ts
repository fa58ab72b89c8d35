import {
  type AcquireLeaseOptions,
  AgentStateError,
  afterPosition,
  applyAcquire,
  applyDelete,
  applyPut,
  applyRelease,
  applyRenew,
  assertLeaseShape,
  assertValidKey,
  type Backend,
  backendFailure,
  type Capabilities,
  CONTRACT_VERSION,
  checkAcquire,
  checkDelete,
  checkPut,
  collectListPage,
  type DeleteOptions,
  isAgentStateError,
  type KeyState,
  type Lease,
  type ListOptions,
  type ListPage,
  liveLease,
  MAX_KEY_BYTES,
  metaOf,
  normalizeListOptions,
  type PutOptions,
  parseBackendOptions,
  prefixRange,
  quoteForMessage,
  type StoredValue,
  setWatchInterrupt,
  type ValueMeta,
  type WatchOptions,
  type WriterIdentity,
} from '@agent-state/core'
import type pg from 'pg'
import {
  createPostgresWatcher,
  POSTGRES_CHANGE_NOTIFICATION,
  type WatcherHooks,
} from './change-notification.js'
import { type Connection, openConnection } from './connection.js'

import {
  type PostgresBackendOptions,
  postgresOptionsSchema,
  type ResolvedPostgresOptions,
} from './options.js'
import {
  decodeListed,
  decodeState,
  type LoadedState,
  leaseParams,
  type StateRow,
  valueParams,
} from './row-codec.js'
import { type MigrationHooks, migrate } from './schema.js'
import { buildStatements, changeChannel, type Statements } from './statements.js'

/** Test hooks (frozen-writer tier): not part of the options, never set in production. */
export interface PostgresBackendHooks {
  /** Called synchronously between a write's read and its conditional write statement. */
  readonly beforeWrite?: () => void
  /** Hooks of the migration (see `MigrationHooks`). */
  readonly migration?: MigrationHooks
  /** Replaces statements (mutants of the fencing guard in tests). */
  readonly statements?: (statements: Statements) => Statements
  /** Hooks of the watcher (see `WatcherHooks`). */
  readonly watcher?: WatcherHooks
  /**
   * `false`: a change hint that failed is dropped and the write acknowledged
   * anyway (a mutant: watchers never hear of the write).
   */
  readonly retryAnnounce?: boolean
  /**
   * `false`: the write is acknowledged without waiting for its change hint's
   * commit (a mutant: a watcher may read before it is told).
   */
  readonly announceBeforeAck?: boolean
}

/** How many lost races (a concurrent write changed the row) one operation retries. */
const MAX_LOST_RACES = 10_000

/** What a write step returns: the next state (or none), the result, and how to write it. */
interface Step<T> {
  readonly next: KeyState | undefined
  readonly result: T
  /** The lease the write must still hold at the moment of the write (fenced put/delete, renew). */
  readonly fence?: Lease | undefined
}

/**
 * Creates a backend on a PostgreSQL database (node-postgres 8.x, its pool).
 * Synchronous: no connection is made here. The schema migrations (see
 * `schema.ts`) run before the first operation, which fails with their error
 * (`INCOMPATIBLE_SCHEMA`, or `UNAVAILABLE` for an unreachable server, tried
 * again by the next operation). {@link openPostgresBackend} migrates first.
 *
 * Each operation reads the key's row together with the database clock in
 * one statement, applies core's pure transition rules to it, and writes the
 * result with one conditional statement: `INSERT … ON CONFLICT DO NOTHING`
 * for a key without a row, otherwise `UPDATE … WHERE row_version = $read`
 * (every write draws a new row version from a sequence), which for a fenced
 * write also requires `lease_token = $token AND lease_expires_at >
 * clock_timestamp()` in the same statement. A statement that matches no row
 * lost a race: the operation reads again and re-applies the rules. Lease
 * expiry is judged on the database clock (`leaseClock: 'server'`).
 *
 * @throws `INVALID_ARGUMENT` for bad options.
 *
 * @example
 * ```ts
 * const backend = createPostgresBackend({
 *   connectionString: 'postgres://agent:secret@db.internal:5432/app',
 *   namespace: 'agent-1',
 * })
 * await backend.put('notes/today', new TextEncoder().encode('hello'))
 * ```
 */
export function createPostgresBackend(options: PostgresBackendOptions): Backend {
  return createWithHooks(options, {})
}

/**
 * {@link createPostgresBackend}, then the migrations: resolves once the
 * schema is ready, so a wrong URL, a missing privilege or a newer schema
 * fails here rather than at the first operation.
 *
 * @throws `INVALID_ARGUMENT` for bad options, `INCOMPATIBLE_SCHEMA` when a
 *   newer release migrated the schema (nothing is written), `UNAVAILABLE`
 *   when the server cannot be reached or the role lacks a privilege (each
 *   names the server, never the password).
 */
export async function openPostgresBackend(options: PostgresBackendOptions): Promise<Backend> {
  return openWithHooks(options, {})
}

/** {@link openPostgresBackend} with test hooks (see {@link PostgresBackendHooks}). */
export async function openWithHooks(
  options: PostgresBackendOptions,
  hooks: PostgresBackendHooks,
): Promise<Backend> {
  const backend = createWithHooks(options, hooks)
  try {
    await (backend as Backend & { [READY]: () => Promise<void> })[READY]()
  } catch (error) {
    await backend.close()
    throw error
  }
  return backend
}

/** Where a created backend keeps its "migrate if not done yet" step, for `openWithHooks`. */
const READY = Symbol('ready')

/** {@link createPostgresBackend} with test hooks (see {@link PostgresBackendHooks}). */
export function createWithHooks(
  options: PostgresBackendOptions,
  hooks: PostgresBackendHooks,
): Backend {
  const resolved = parseBackendOptions(postgresOptionsSchema, options, 'PostgreSQL')
  const connection = openConnection(resolved)
  let migrated: Promise<void> | undefined
  let refused: unknown
  // Migrates once; an unreachable server is tried again by the next
  // operation, a refusal (INCOMPATIBLE_SCHEMA) stays.
  const ready = (): Promise<void> => {
    if (refused !== undefined) return Promise.reject(refused)
    migrated ??= connection
      .use('open', true, (client) => migrate(client, resolved.schema, hooks.migration))
      .catch((error: unknown) => {
        migrated = undefined
        const failure = openFailure(error, connection.server)
        if (isAgentStateError(failure, 'INCOMPATIBLE_SCHEMA')) refused = failure
        throw failure
      })
    return migrated
  }
  const backend = createBackend(
    resolved,
    {
      server: connection.server,
      use: async (operation, writing, body) => {
        await ready()
        return connection.use(operation, writing, body)
      },
      end: () => connection.end(),
    },
    hooks,
  )
  return Object.assign(backend, { [READY]: ready })
}

/** An error of the migration step as the caller sees it: naming the server, never INDETERMINATE. */
function openFailure(error: unknown, server: string): unknown {
  if (!isAgentStateError(error) || error.code === 'INCOMPATIBLE_SCHEMA') return error
  return new AgentStateError(
    error.code === 'INDETERMINATE' ? 'UNAVAILABLE' : error.code,
    `Could not open the PostgreSQL backend on ${server}: ${error.message}`,
    { context: { ...error.context, server }, cause: error, retryable: error.retryable },
  )
}

function createBackend(
  options: ResolvedPostgresOptions,
  connection: Connection,
  hooks: PostgresBackendHooks,
): Backend {
  const { namespace, schema, maxValueBytes } = options
  const built = buildStatements(schema)
  const sql = hooks.statements?.(built) ?? built
  const capabilities: Capabilities = {
    durable: true,
    multiProcess: true,
    multiHost: true,
    leaseClock: 'server',
    maxKeyBytes: MAX_KEY_BYTES,
    maxValueBytes,
    ...(options.changeNotification ? { changeNotification: POSTGRES_CHANGE_NOTIFICATION } : {}),
  }
  let closed = false

  function assertOpen(): void {
    if (closed) throw new AgentStateError('CLOSED', 'The postgres backend is closed')
  }

  const watcher = options.changeNotification
    ? createPostgresWatcher(
        options,
        connection,
        changeChannel(schema),
        namespace,
        assertOpen,
        hooks.watcher,
      )
    : undefined

  async function load(client: pg.ClientBase, key: string, withValue: boolean) {
    const result = await client.query<StateRow>(withValue ? sql.readWithValue : sql.read, [
      namespace,
      key,
    ])
    return decodeState(key, result.rows[0] as StateRow)
  }

  /** The read of `head`, `get` and `getLease`. */
  function read<T>(
    operation: string,
    key: string,
    withValue: boolean,
    then: (l: LoadedState) => T,
  ) {
    assertOpen()
    assertValidKey(key, MAX_KEY_BYTES)
    return connection.use(operation, false, async (client) =>
      then(await load(client, key, withValue)),
    )
  }

  /**
   * Writes `next` over the loaded row; resolves whether the conditional
   * statement matched and, for a statement that writes a value (`announces`),
   * the outcome of its change hint: `Statements.announce`, queued on the same
   * connection right behind the write (node-postgres pipeline mode), so the
   * server runs it once the write committed without waiting for the client.
   * It goes whether or not the write matched: a lost race costs a spurious
   * hint, which the contract allows. Resolves to the hint's error, if any.
   */
  async function store(
    client: pg.ClientBase,
    key: string,
    loaded: LoadedState,
    next: KeyState,
    fence: Lease | undefined,
    announces: boolean,
  ): Promise<{ matched: boolean; hinted?: Promise<unknown> | undefined }> {
    const previous = loaded.state
    const write = async <R extends pg.QueryResultRow>(text: string, params: unknown[]) => {
      const written = client.query<R>(text, params)
      if (!announces) return { result: await written }
      const hinted = client.query(sql.announce, [namespace, key]).then(
        () => undefined,
        (error: unknown) => error ?? new Error('change hint failed'),
      )
      try {
        return { result: await written, hinted }
      } catch (error) {
        await hinted
        throw error
      }
    }
    if (loaded.rowVersion === null) {
      const { result, hinted } = await write(sql.insert, [
        namespace,
        key,
        ...valueParams(next),
        ...leaseParams(next),
      ])
      return { matched: result.rowCount === 1, hinted }
    }
    const valueChanged = next.revision !== previous.revision
    const leaseChanged = next.lease !== previous.lease || next.fence !== previous.fence
    if (valueChanged && next.version === null && next.fence === 0 && next.lease === null) {
      // A delete of a key that never had a lease: nothing must outlive the value.
      const { result, hinted } = await write(sql.remove, [namespace, key, loaded.rowVersion])
      return { matched: result.rowCount === 1, hinted }
    }
    let rowVersion = loaded.rowVersion
    let hinted: Promise<unknown> | undefined
    if (valueChanged) {
      const params = [namespace, key, rowVersion, ...valueParams(next)]
      if (fence !== undefined) params.push(fence.token)
      const written = await write<{ row_version: string }>(
        sql.writeValue(fence !== undefined),
        params,
      )
      hinted = written.hinted
      if (written.result.rowCount !== 1) return { matched: false, hinted }
      rowVersion = (written.result.rows[0] as { row_version: string }).row_version
    }
    if (leaseChanged) {
      // Never together with a value change: core's rules change one or the other.
      const params = [namespace, key, rowVersion, ...leaseParams(next)]
      if (fence !== undefined) params.push(fence.token)
      const result = await client.query(sql.writeLease(fence !== undefined), params)
      return { matched: result.rowCount === 1, hinted }
    }
    return { matched: true, hinted }
  }

  /** Sends the change hint of `key` (see `Statements.announce`). */
  async function announce(client: pg.ClientBase, key: string): Promise<void> {
    await client.query(sql.announce, [namespace, key])
  }

  /**
   * Reads the key's state, applies `step`, writes its next state
   * conditionally, and starts over on a lost race. The read carries the
   * database time `step` judges leases by.
   *
   * A write that changed a value (not a lease step) is announced right after
   * its commit (see `store`) and acknowledged only once the announcement
   * committed too. If the announcement failed (its connection lost, an
   * error), it is sent once more on another connection; if that fails too the
   * write is `INDETERMINATE` (it committed, but its watchers cannot be told):
   * an acknowledged write was always announced.
   */
  async function update<T>(
    operation: string,
    key: string,
    step: (state: KeyState, now: number) => Step<T>,
  ): Promise<T> {
    let committed: { result: T } | undefined
    try {
      return await connection.use(operation, true, async (client) => {
        const written = await writeOnce(client, key, step)
        if (written.hinted === undefined) return written.result
        committed = written
        if (hooks.announceBeforeAck === false) return written.result
        const failure = await written.hinted
        if (failure !== undefined) throw failure
        return written.result
      })
    } catch (error) {
      if (committed === undefined) throw error
      if (hooks.retryAnnounce === false) return committed.result
      try {
        await connection.use(`${operation} (change hint)`, true, (client) => announce(client, key))
      } catch (again) {
        throw backendFailure({
          operation,
          mayHaveApplied: true,
          cause: again,
          message: `The ${operation} of key ${quoteForMessage(key)} was committed, but its change hint could not be sent to PostgreSQL`,
          context: { key },
        })
      }
      return committed.result
    }
  }

  /**
   * The attempts of {@link update} on one connection: the result and, for a
   * write that changed a value, the outcome of its change hint (see `store`).
   */
  async function writeOnce<T>(
    client: pg.ClientBase,
    key: string,
    step: (state: KeyState, now: number) => Step<T>,
  ): Promise<{ result: T; hinted?: Promise<unknown> | undefined }> {
    for (let lost = 0; ; lost++) {
      assertOpen()
      const loaded = await load(client, key, false)
      let outcome: Step<T>
      try {
        outcome = step(loaded.state, loaded.now)
      } catch (error) {
        throw withStoredSize(error, loaded)
      }
      const next = outcome.next
      if (next === undefined) return { result: outcome.result }
      hooks.beforeWrite?.()
      // A created row holding a value, or a changed value (a put or a delete): lease steps are not announced.
      const announces =
        loaded.rowVersion === null ? next.version !== null : next.revision !== loaded.state.revision
      const { matched, hinted } = await store(client, key, loaded, next, outcome.fence, announces)
      if (matched) return { result: outcome.result, hinted }
      // A lost race: its hint (spurious) is done with before the connection is used again.
      await hinted
      if (lost + 1 >= MAX_LOST_RACES) {
        throw backendFailure({
          operation: 'conditional write',
          mayHaveApplied: false,
          message: `Gave up on key ${quoteForMessage(key)} after ${lost + 1} lost races`,
          context: { key, attempts: lost + 1 },
        })
      }
    }
  }

  const backend: Backend = {
    contractVersion: CONTRACT_VERSION,
    name: 'postgres',
    capabilities,

    async get(key: string): Promise<StoredValue | null> {
      return read('get', key, true, ({ state }) => {
        const meta = metaOf(key, state)
        return meta === null ? null : { value: state.value, meta }
      })
    },

    async head(key: string): Promise<ValueMeta | null> {
      return read('head', key, false, ({ state, size }) => {
        const meta = metaOf(key, state)
        return meta === null ? null : { ...meta, size }
      })
    },

    async put(key: string, value: Uint8Array, putOptions?: PutOptions): Promise<ValueMeta> {
      assertOpen()
      const writer: WriterIdentity | null = checkPut(key, value, putOptions, capabilities)
      // A copy: the caller may reuse its buffer as soon as put returns.
      const bytes = value.slice()
      return update('put', key, (state, now) => {
        const next = applyPut(key, state, bytes, writer, putOptions, now)
        return { next, result: metaOf(key, next) as ValueMeta, fence: putOptions?.lease }
      })
    },

    async delete(key: string, deleteOptions?: DeleteOptions): Promise<boolean> {
      assertOpen()
      checkDelete(key, deleteOptions, MAX_KEY_BYTES)
      return update('delete', key, (state, now) => {
        const next = applyDelete(key, state, deleteOptions, now)
        return { next, result: next !== undefined, fence: deleteOptions?.lease }
      })
    },

    async list(listOptions?: ListOptions): Promise<ListPage> {
      assertOpen()
      const options = normalizeListOptions(listOptions)
      const range = prefixRange(options.prefix)
      return collectListPage(options, async (position, max) => {
        const scanRange = range === null ? null : afterPosition(range, position)
        if (scanRange === null) return { entries: [], done: true }
        const params: unknown[] = [namespace, scanRange.from]
        if (scanRange.to !== undefined) params.push(scanRange.to)
        params.push(max)
        const result = await connection.use('list', false, (client) =>
          client.query<{ key: string; version: string; size: string; updated_at: string }>(
            sql.scan(scanRange),
            params,
          ),
        )
        return { entries: result.rows.map(decodeListed), done: result.rows.length < max }
      })
    },

    async acquireLease(key: string, leaseOptions: AcquireLeaseOptions): Promise<Lease> {
      assertOpen()
      checkAcquire(key, leaseOptions, MAX_KEY_BYTES)
      return update('acquireLease', key, (state, now) => {
        const { state: next, lease } = applyAcquire(key, state, leaseOptions, now)
        return { next, result: lease }
      })
    },

    async renewLease(lease: Lease): Promise<Lease> {
      assertOpen()
      assertLeaseShape(lease)
      assertValidKey(lease.key, MAX_KEY_BYTES)
      return update('renewLease', lease.key, (state, now) => {
        const { state: next, lease: renewed } = applyRenew(state, lease, now)
        return { next, result: renewed, fence: lease }
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
      return read('getLease', key, false, ({ state, now }) => liveLease(key, state, now))
    },

    async destroy(): Promise<void> {
      assertOpen()
      await connection.use('destroy', true, (client) => client.query(sql.destroy, [namespace]))
    },

    async close(): Promise<void> {
      if (closed) return
      closed = true
      await watcher?.close()
      await connection.end()
    },
  }
  if (watcher === undefined) return backend
  backend.watch = (prefix: string, watchOptions?: WatchOptions) =>
    watcher.watch(prefix, watchOptions)
  // The contract's resync check (and `agent-state verify`) ends the listen connection's server process.
  return setWatchInterrupt(backend, () => watcher.interrupt())
}

/**
 * Adds the stored size to a failed precondition's `context.current`: writes
 * read the state without its value, so core's meta of it says size 0.
 */
function withStoredSize(error: unknown, loaded: LoadedState): unknown {
  if (!isAgentStateError(error, 'PRECONDITION_FAILED')) return error
  const current = error.context.current as ValueMeta | null | undefined
  if (current === null || current === undefined) return error
  return new AgentStateError(error.code, error.message, {
    context: { ...error.context, current: { ...current, size: loaded.size } },
    retryable: error.retryable,
  })
}
