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
  fenceLost,
  GROUPED_FIRST_BATCH,
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
  randomSuffix,
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
import type { ErrorMappingMutants } from './errors.js'
import { postgresGetMany } from './get-many.js'
import { createHintBatch, type ExpectedWrite } from './hint-batch.js'
import { POSTGRES_NATIVE_QUEUE, postgresNativeQueue } from './native-queue.js'
import {
  type PostgresBackendOptions,
  postgresOptionsSchema,
  type ResolvedPostgresOptions,
} from './options.js'
import { buildQueueStatements, type QueueStatements } from './queue-statements.js'
import {
  decodeFenceToken,
  decodeListed,
  decodeState,
  type LoadedState,
  leaseParams,
  type StateRow,
  valueCrc,
  valueParams,
  type WrittenRow,
} from './row-codec.js'
import { type MigrationHooks, migrate } from './schema.js'
import {
  buildStatements,
  type ConditionShape,
  changeChannel,
  type Statements,
} from './statements.js'

/** Test hooks (frozen-writer tier): not part of the options, never set in production. */
export interface PostgresBackendHooks {
  /**
   * Called synchronously right before a write's conditional statement: for
   * `put`/`delete` before their one statement, for a lease step between its
   * read and its write.
   */
  readonly beforeWrite?: () => void
  /**
   * `true`: `put`/`delete` read the row in a statement of its own before
   * their write statement (a mutant: two round trips per write).
   */
  readonly readFirst?: boolean
  /** Hooks of the migration (see `MigrationHooks`). */
  readonly migration?: MigrationHooks
  /**
   * `false`: the statements' answers are taken for theirs unchecked (a mutant
   * of answer-check.ts: a pooler's foreign answer is believed).
   */
  readonly checkAnswers?: boolean
  /** Mutants of the error mapping (see `ErrorMappingMutants`, errors.ts). */
  readonly errorMapping?: ErrorMappingMutants
  /**
   * Retries of the migration step after a lost connection (default
   * {@link OPEN_RETRIES}); `0` is a mutant: the first lost connection fails the open.
   */
  readonly openRetries?: number
  /** `true`: a refusal of the migration step is retried too (a mutant). */
  readonly retryRefusals?: boolean
  /** Called before each attempt of the migration step (tests count them). */
  readonly onOpenAttempt?: () => void
  /** Replaces statements (mutants of the fencing guard in tests). */
  readonly statements?: (statements: Statements) => Statements
  /**
   * The first batch of a listing with a delimiter (default core's
   * `GROUPED_FIRST_BATCH`, see `ListBatching`); a mutant sets 1000, which
   * reads a whole group's rows to list it as one prefix.
   */
  readonly groupedFirstBatch?: number
  /** Replaces the native queue's statements (a mutant: the same texts, undeclared). */
  readonly queueStatements?: (statements: QueueStatements) => QueueStatements
  /**
   * Mutants of what a queue transaction's lost connection reports: `always`
   * possibly applied (`INDETERMINATE` also before its `COMMIT` was sent, when
   * nothing was written), `never` (`UNAVAILABLE` also once it was sent).
   */
  readonly queueMayHaveApplied?: 'always' | 'never'
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
  /**
   * `false`: every write sends a hint of its own, even while others are in
   * flight (a mutant for the statement count of concurrent writes, hint-batch.ts).
   */
  readonly batchHints?: boolean
  /**
   * `false`: a batch of hints never waits for a write to carry it and takes
   * the lane at once (a mutant for the carried-batch test, hint-batch.ts).
   */
  readonly carryHints?: boolean
  /** How long a batch waits for a carrier (`CARRIER_WAIT_MS` unless given; tests). */
  readonly carrierWaitMs?: number
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
 * A `put` or `delete` is ONE statement (one round trip): it writes only if
 * the contract's conditions (no live lease, or the given token unexpired;
 * `ifMatch`/`ifNoneMatch`) hold on the row when written, and returns the
 * row as its snapshot saw it, which core's pure rules judge when nothing was
 * written (the error to reply, or a race: the statement is sent again). A
 * lease step reads the key's row together with the database clock in one
 * statement, applies core's rules, and writes the result with one
 * conditional statement (`INSERT … ON CONFLICT DO NOTHING` for a key without
 * a row, otherwise `UPDATE … WHERE row_version = $read`, which for a renew
 * also requires `lease_token = $token AND lease_expires_at >
 * clock_timestamp()`). Lease expiry is judged on the database clock
 * (`leaseClock: 'server'`).
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
  const connection = openConnection(resolved, hooks.checkAnswers ?? true, hooks.errorMapping)
  let migrated: Promise<void> | undefined
  let refused: unknown
  // Once set, operations skip the wait for the migrations (a resolved promise
  // still costs every operation an await).
  let isReady = false
  // Migrates once; an unreachable server is tried again by the next
  // operation, a refusal (INCOMPATIBLE_SCHEMA) stays.
  const ready = (): Promise<void> => {
    if (refused !== undefined) return Promise.reject(refused)
    migrated ??= migrateRetrying(connection, resolved.schema, hooks).then(
      () => {
        isReady = true
      },
      (error: unknown) => {
        migrated = undefined
        const failure = openFailure(error, connection.server)
        if (isAgentStateError(failure, 'INCOMPATIBLE_SCHEMA')) refused = failure
        throw failure
      },
    )
    return migrated
  }
  const backend = createBackend(
    resolved,
    {
      server: connection.server,
      use: (operation, writing, body) =>
        isReady
          ? connection.use(operation, writing, body)
          : ready().then(() => connection.use(operation, writing, body)),
      // Used only after a write, so after the migrations.
      useLane: (operation, writing, body) => connection.useLane(operation, writing, body),
      end: () => connection.end(),
    },
    hooks,
  )
  return Object.assign(backend, { [READY]: ready })
}

/**
 * How many times the migration step is sent again after its connection was
 * lost (so at most 1 + 3 attempts), each on a fresh pooled connection (the
 * lost one is discarded) after {@link OPEN_BACKOFF_MS} × 2^(retry − 1): 50,
 * 100, 200 ms.
 */
export const OPEN_RETRIES = 3
/** Backoff before the first retry of the migration step; doubled for each next one. */
const OPEN_BACKOFF_MS = 50

/**
 * Runs the migrations (`migrate`, schema.ts) on a pooled connection. A
 * connection lost after a statement was sent (`INDETERMINATE`: a server
 * connection killed, a network cut, a pooler handing over a connection with
 * another client's answer still to come) is retried up to
 * {@link OPEN_RETRIES} times: the step is idempotent and runs in one
 * transaction under a transaction-scoped advisory lock, so a lost attempt
 * either committed whole (the next one reads the version and stops) or was
 * rolled back whole with its lock. Anything else fails at once: a refusal
 * (`INCOMPATIBLE_SCHEMA`, a missing privilege) or an unexpected error (a
 * bug) would only fail again, and an unreachable server is tried again by
 * the next operation.
 */
async function migrateRetrying(
  connection: Connection,
  schema: string,
  hooks: PostgresBackendHooks,
): Promise<void> {
  const retries = hooks.openRetries ?? OPEN_RETRIES
  for (let retry = 0; ; retry++) {
    hooks.onOpenAttempt?.()
    try {
      await connection.use('open', true, (client) => migrate(client, schema, hooks.migration))
      return
    } catch (error) {
      // A lost connection is a retryable INDETERMINATE; an unexpected error (a bug,
      // errors.ts) is INDETERMINATE too but never retryable: sent again, it would fail again.
      const lost =
        (isAgentStateError(error, 'INDETERMINATE') && error.retryable) ||
        hooks.retryRefusals === true
      if (!lost || retry >= retries) throw error
      await new Promise((resolve) => setTimeout(resolve, OPEN_BACKOFF_MS * 2 ** retry))
    }
  }
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
  const builtQueue = buildQueueStatements(schema)
  const queueSql = hooks.queueStatements?.(builtQueue) ?? builtQueue
  const capabilities: Capabilities = {
    durable: true,
    multiProcess: true,
    multiHost: true,
    leaseClock: 'server',
    // The fenced put function locks the fence key's row FOR SHARE (schema-fenced-put.ts).
    crossKeyFence: true,
    maxKeyBytes: MAX_KEY_BYTES,
    maxValueBytes,
    nativeQueue: POSTGRES_NATIVE_QUEUE,
    ...(options.changeNotification ? { changeNotification: POSTGRES_CHANGE_NOTIFICATION } : {}),
  }
  const listBatching = { groupedFirstBatch: hooks.groupedFirstBatch ?? GROUPED_FIRST_BATCH }
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

  const hints = createHintBatch(
    {
      one: (client, key) => client.query(sql.announce, [namespace, key]),
      carried: (client, keys) => client.query(sql.announceKeys, [namespace, keys]),
      lane: (keys) =>
        connection.useLane('change hint', true, (client) =>
          client.query(sql.announceKeys, [namespace, keys]),
        ),
    },
    {
      batched: hooks.batchHints ?? true,
      carried: hooks.carryHints ?? true,
      ...(hooks.carrierWaitMs === undefined ? {} : { carrierWaitMs: hooks.carrierWaitMs }),
    },
  )

  /**
   * Sends a write statement with its change hint (`Statements.announce`)
   * queued on the same connection right behind it (node-postgres pipeline
   * mode), so the server runs the hint once the write committed without
   * waiting for the client: one round trip; that hint also names the keys of
   * a batch waiting for a write to carry it. While other writes' hints are in
   * flight, the key joins the batch instead (hint-batch.ts). `expected`: the
   * write's pending state (`HintBatch.expect`), ended here.
   * The hint goes whether or not the write matched (a spurious hint, which
   * the contract allows). `hinted` resolves to the hint's error, if any.
   */
  async function sendWithHint<R extends pg.QueryResultRow>(
    client: pg.ClientBase,
    key: string,
    text: string,
    params: unknown[],
    expected?: ExpectedWrite,
  ): Promise<{ result: pg.QueryResult<R>; hinted: Promise<unknown>; pipelined: boolean }> {
    const { written, hinted, pipelined } = hints.send(
      client,
      key,
      () => client.query<R>(text, params),
      expected,
    )
    try {
      return { result: await written, hinted, pipelined }
    } catch (error) {
      await hinted
      throw error
    }
  }

  /**
   * Writes the lease step `next` over the loaded row: `INSERT … ON CONFLICT
   * DO NOTHING` for a key without a row, otherwise `UPDATE … WHERE
   * row_version = $read` (for a renew also on the lease token and expiry).
   * Lease steps change no value and announce nothing. Resolves whether the
   * conditional statement matched.
   */
  async function storeLease(
    client: pg.ClientBase,
    key: string,
    loaded: LoadedState,
    next: KeyState,
    fence: Lease | undefined,
  ): Promise<boolean> {
    if (loaded.rowVersion === null) {
      const result = await client.query(sql.insert, [
        namespace,
        key,
        ...valueParams(next),
        ...leaseParams(next),
      ])
      return result.rowCount === 1
    }
    const params = [namespace, key, loaded.rowVersion, ...leaseParams(next)]
    if (fence !== undefined) params.push(fence.token)
    const result = await client.query(sql.writeLease(fence !== undefined), params)
    return result.rowCount === 1
  }

  /** Sends the change hint of `key` (see `Statements.announce`), or of each of `keys`. */
  async function announce(
    client: pg.ClientBase,
    key: string,
    keys: readonly string[] | undefined,
  ): Promise<void> {
    if (keys === undefined) await client.query(sql.announce, [namespace, key])
    else await client.query(queueSql.announce, [namespace, keys])
  }

  /**
   * Runs `attempts` on one pooled connection. A write that changed a value
   * (`hinted` set) is acknowledged only once its change hint committed too.
   * If the hint failed (its connection lost, an error), it is sent once more
   * on another connection; if that fails too the write is `INDETERMINATE`
   * (it committed, but its watchers cannot be told): an acknowledged write
   * was always announced. `hintKeys`: the keys the hint announced when not
   * `key` alone (a queue transaction's, native-queue.ts). `mayHaveApplied`:
   * whether a lost connection may have left the write applied (default: yes,
   * `INDETERMINATE`; a queue transaction's says no before its `COMMIT` was sent).
   */
  async function update<T>(
    operation: string,
    key: string,
    attempts: (
      client: pg.ClientBase,
    ) => Promise<{ result: T; hinted?: Promise<unknown> | undefined; pipelined?: boolean }>,
    hintKeys?: () => readonly string[],
    mayHaveApplied: () => boolean = () => true,
  ): Promise<T> {
    let committed: { result: T } | undefined
    let batched: Promise<unknown> | undefined
    try {
      const result = await connection.use(operation, mayHaveApplied, async (client) => {
        const written = await attempts(client)
        if (written.hinted === undefined) return written.result
        committed = written
        if (hooks.announceBeforeAck === false) return written.result
        // A batch's hint does not ride on this connection: it is awaited once the
        // connection is back in the pool, for the writes queued behind this one.
        if (written.pipelined === false) {
          batched = written.hinted
          return written.result
        }
        const failure = await written.hinted
        if (failure !== undefined) throw failure
        return written.result
      })
      const failure = await batched
      if (failure !== undefined) throw failure
      return result
    } catch (error) {
      if (committed === undefined) throw error
      if (hooks.retryAnnounce === false) return committed.result
      try {
        await connection.use(`${operation} (change hint)`, true, (client) =>
          announce(client, key, hintKeys?.()),
        )
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

  /** Throws once an operation lost `lost + 1` races in a row. */
  function assertRaceBudget(key: string, lost: number): void {
    if (lost + 1 < MAX_LOST_RACES) return
    throw backendFailure({
      operation: 'conditional write',
      mayHaveApplied: false,
      message: `Gave up on key ${quoteForMessage(key)} after ${lost + 1} lost races`,
      context: { key, attempts: lost + 1 },
    })
  }

  /**
   * A value write (`put`, `delete`) in ONE round trip: one statement that
   * writes only if the contract's conditions hold on the row when written
   * (see `Statements.put`), its change hint pipelined behind it. The
   * statement returns the row as its snapshot saw it; when nothing was
   * written, `step` (core's rule) judges that snapshot: its error is the
   * reply (`LEASE_HELD`, `LEASE_LOST`, `PRECONDITION_FAILED`), a step with
   * nothing to write is the result (a delete of a key without a value), and
   * a step that would have written means a concurrent write changed the row
   * after the snapshot: the statement is sent again. `refuse` judges first
   * what the answer says beyond the key's row (a fenced put's fence, checked
   * before the key's own lease and precondition), and throws its refusal.
   */
  function writeInOneStatement<T>(
    operation: string,
    key: string,
    text: string,
    params: unknown[],
    written: (row: WrittenRow) => T | undefined,
    step: (state: KeyState, now: number) => Step<T>,
    refuse?: (row: WrittenRow) => void,
  ): Promise<T> {
    const expected = hints.expect()
    return update(operation, key, async (client) => {
      for (let lost = 0; ; lost++) {
        assertOpen()
        // A mutant (round-trip count test): the read a two-statement write would send first.
        if (hooks.readFirst === true) await load(client, key, false)
        hooks.beforeWrite?.()
        const { result, hinted, pipelined } = await sendWithHint<WrittenRow>(
          client,
          key,
          text,
          params,
          expected,
        )
        const row = result.rows[0] as WrittenRow
        const done = written(row)
        if (done !== undefined) return { result: done, hinted, pipelined }
        // Nothing written: the snapshot explains why, or a race does.
        await hinted
        refuse?.(row)
        const loaded = decodeState(key, row)
        let outcome: Step<T>
        try {
          outcome = step(loaded.state, loaded.now)
        } catch (error) {
          throw withStoredSize(error, loaded)
        }
        if (outcome.next === undefined) return { result: outcome.result }
        assertRaceBudget(key, lost)
      }
    }).finally(expected.leave)
  }

  /**
   * A lease step (acquire, renew, release): reads the key's state, applies
   * `step`, writes its next state conditionally on the row version read, and
   * starts over on a lost race. The read carries the database time `step`
   * judges leases by.
   */
  function updateLease<T>(
    operation: string,
    key: string,
    step: (state: KeyState, now: number) => Step<T>,
  ): Promise<T> {
    return update(operation, key, async (client) => {
      for (let lost = 0; ; lost++) {
        assertOpen()
        const loaded = await load(client, key, false)
        const outcome = step(loaded.state, loaded.now)
        const next = outcome.next
        if (next === undefined) return { result: outcome.result }
        hooks.beforeWrite?.()
        if (await storeLease(client, key, loaded, next, outcome.fence)) {
          return { result: outcome.result }
        }
        assertRaceBudget(key, lost)
      }
    })
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

    getMany: postgresGetMany({ connection, namespace, schema, assertOpen }),

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
      const conditions = conditionsOf(putOptions)
      const shape = { ...conditions.shape, ifNoneMatch: putOptions?.ifNoneMatch === '*' }
      const fence = putOptions?.fence
      const params: unknown[] = [
        namespace,
        key,
        `${randomSuffix()}${randomSuffix()}`,
        writer === null ? null : JSON.stringify(writer),
        bytes.byteLength,
        Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
        valueCrc(bytes),
        ...conditions.params,
      ]
      // A fenced put is a function of its own (migration 4): the plain one does no more work.
      if (fence !== undefined) params.push(fence.key, fence.token)
      return writeInOneStatement(
        'put',
        key,
        fence === undefined ? sql.put(shape) : sql.fencedPut(shape),
        params,
        (row) =>
          typeof row.written_version !== 'string'
            ? undefined
            : {
                key,
                version: row.written_version,
                size: bytes.byteLength,
                writer,
                updatedAt: Number(row.written_updated_at),
              },
        (state, now) => {
          const next = applyPut(key, state, bytes, writer, putOptions, now)
          return { next, result: metaOf(key, next) as ValueMeta }
        },
        fence === undefined
          ? undefined
          : (row) => {
              // Judged by the function on the locked row and the database clock; tokens decide.
              if (row.fence_lost !== false) {
                throw fenceLost(key, fence, decodeFenceToken(fence.key, row))
              }
            },
      )
    },

    async delete(key: string, deleteOptions?: DeleteOptions): Promise<boolean> {
      assertOpen()
      checkDelete(key, deleteOptions, MAX_KEY_BYTES)
      const conditions = conditionsOf(deleteOptions)
      return writeInOneStatement(
        'delete',
        key,
        sql.delete(conditions.shape),
        [namespace, key, ...conditions.params],
        (row) => (Number(row.written) === 1 ? true : undefined),
        (state, now) => {
          const next = applyDelete(key, state, deleteOptions, now)
          return { next, result: next !== undefined }
        },
      )
    },

    async list(listOptions?: ListOptions): Promise<ListPage> {
      assertOpen()
      const options = normalizeListOptions(listOptions)
      const range = prefixRange(options.prefix)
      // Each row is sent and parsed: a big delimiter group is read in a small batch (core's ListBatching).
      return collectListPage(
        options,
        async (position, max) => {
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
        },
        listBatching,
      )
    },

    async acquireLease(key: string, leaseOptions: AcquireLeaseOptions): Promise<Lease> {
      assertOpen()
      checkAcquire(key, leaseOptions, MAX_KEY_BYTES)
      return updateLease('acquireLease', key, (state, now) => {
        const { state: next, lease } = applyAcquire(key, state, leaseOptions, now)
        return { next, result: lease }
      })
    },

    async renewLease(lease: Lease): Promise<Lease> {
      assertOpen()
      assertLeaseShape(lease)
      assertValidKey(lease.key, MAX_KEY_BYTES)
      return updateLease('renewLease', lease.key, (state, now) => {
        const { state: next, lease: renewed } = applyRenew(state, lease, now)
        return { next, result: renewed, fence: lease }
      })
    },

    async releaseLease(lease: Lease): Promise<boolean> {
      assertOpen()
      assertLeaseShape(lease)
      assertValidKey(lease.key, MAX_KEY_BYTES)
      return updateLease('releaseLease', lease.key, (state) => {
        const next = applyRelease(state, lease)
        return { next, result: next !== undefined }
      })
    },

    async getLease(key: string): Promise<Lease | null> {
      return read('getLease', key, false, ({ state, now }) => liveLease(key, state, now))
    },

    // The daemon queue's operations, one transaction each (native-queue.ts).
    nativeQueue: postgresNativeQueue({
      update: (operation, key, hintKeys, body, mayHaveApplied) =>
        update(
          operation,
          key,
          body,
          hintKeys,
          hooks.queueMayHaveApplied === undefined
            ? mayHaveApplied
            : () => hooks.queueMayHaveApplied === 'always',
        ),
      sql: queueSql,
      namespace,
      lockTimeoutMs: options.lockTimeoutMs,
      idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs,
      assertOpen,
    }),

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
 * The conditions a value write's statement checks (`Statements.put`,
 * `Statements.delete`) and their parameters, in the statement's order:
 * the lease token, then the expected version.
 */
function conditionsOf(options: { lease?: Lease; ifMatch?: string } | undefined): {
  shape: ConditionShape
  params: unknown[]
} {
  const params: unknown[] = []
  if (options?.lease !== undefined) params.push(options.lease.token)
  if (options?.ifMatch !== undefined) params.push(options.ifMatch)
  return {
    shape: { fenced: options?.lease !== undefined, ifMatch: options?.ifMatch !== undefined },
    params,
  }
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
