import { randomUUID } from 'node:crypto'
import {
  AgentStateError,
  assertWatchPrefix,
  type ChangeHint,
  type ChangeNotificationCapability,
  createWatchSet,
  failedWatch,
  type WatchOptions,
} from '@agent-state/core'
import pg from 'pg'
import type { Connection } from './connection.js'
import type { ResolvedPostgresOptions } from './options.js'

/**
 * What the PostgreSQL backend claims. Every write announces its key with
 * `pg_notify` in its own statement (see `statements.ts`), delivered to the
 * listen connection when the write commits: a live watch has it within a
 * round trip. 1000 ms also covers a lost listen connection (a restart,
 * `pg_terminate_backend`): noticed at once, reopened after 50 to 500 ms of
 * back-off, listening again and confirmed by a probe, then every watch resyncs.
 */
export const POSTGRES_CHANGE_NOTIFICATION: ChangeNotificationCapability = {
  mode: 'push',
  maxDelayMs: 1000,
}

/** `application_name` of the listen connection (the pool's is `agent-state`). */
export const LISTEN_APPLICATION_NAME = 'agent-state-listen'

/** Longest wait between two attempts to reopen the listen connection. */
const MAX_RETRY_MS = 500

/**
 * Payloads starting with a dot are the backend's own probes: a namespace
 * never starts with one, so no write's payload (`<namespace>/<key>`) does.
 */
const PROBE_PREFIX = '.probe/'

/**
 * The probe's statement: it notifies, and answers with its own payload, by
 * which it knows its answer from a foreign one.
 */
const PROBE_STATEMENT = 'SELECT $2::text AS probe, pg_notify($1, $2)'

/**
 * How long a probe that got a foreign answer keeps its connection after its
 * notification arrived: its own answer left the server with that commit and
 * is on its way through the pooler.
 */
const FOREIGN_ANSWER_GRACE_MS = 100

/** Whether `answer` is the probe statement's own, for `payload`. */
function isOwnProbeAnswer(answer: pg.QueryResult, payload: string): boolean {
  const names = answer.fields.map((field) => field.name).join(',')
  return names === 'probe,pg_notify' && answer.rows[0]?.probe === payload
}

/** One instance's watches over its schema's change channel. */
export interface PostgresWatcher {
  watch(prefix: string, options: WatchOptions | undefined): AsyncIterable<ChangeHint>
  /**
   * Ends the listen connection's server process with `pg_terminate_backend`
   * (through the pool) and resolves once the client saw it drop: the
   * `WATCH_INTERRUPT` seam, for the contract suite and `agent-state verify`.
   */
  interrupt(): Promise<void>
  /** Ends every watch and closes the listen connection. */
  close(): Promise<void>
}

/** Test hooks of the watcher (its mutant tests); never set in production. */
export interface WatcherHooks {
  /** `false`: a reopened listen connection does not resync its watches (a mutant). */
  readonly resyncOnReconnect?: boolean
  /** `false`: the listen connection counts as working without its probe (a mutant). */
  readonly probe?: boolean
  /**
   * `false`: a probe that got a foreign answer gives its connection back to the pool at once
   * (a mutant: the answers still to come on it reach the next statement sent on it).
   */
  readonly holdAfterForeignAnswer?: boolean
  /**
   * `false`: watches opened while a dropped connection attempt is still in flight wait for it
   * and get no connection of their own (a mutant: daemons' `next({ waitMs })` hung on it).
   */
  readonly connectForLateWatches?: boolean
  /**
   * `true`: a probe whose own statement failed (the pool unreachable, an error
   * answer) counts as a probe that never arrived, so a first connection fails
   * its watches with the "receives no notifications" configuration error (a
   * mutant: the probe before its statement's failures were told apart).
   */
  readonly probeFailureIsSilence?: boolean
}

/**
 * How a probe ended: its notification `arrived`; its statement was answered
 * (so it committed and notified) but nothing arrived in time, `silent`: the
 * listen connection cannot receive notifications; or its statement `failed`
 * before it was known to have run, which says nothing about the listen
 * connection (the pool was unreachable, a pooler answered with another
 * client's error): the connection is retried, never reported misconfigured.
 */
type ProbeOutcome = 'arrived' | 'silent' | 'failed'

/**
 * The watches of one backend instance. `LISTEN` is session state, so it runs
 * on a dedicated `pg.Client`, never on the pool: opened with the first watch,
 * closed with the last (an instance that watches nothing holds no extra
 * connection), on `listenConnectionString` (a direct server connection when
 * the pool goes through PgBouncer) or else the pool's own URL.
 *
 * Once `LISTEN` ran, a probe notification is sent through the pool and the
 * watch is established only when the listen connection receives it: a listen
 * connection that cannot receive notifications (a transaction pooler in
 * between) fails the watches that wait for their first hint with
 * `UNAVAILABLE`, instead of leaving them silent. When the connection closes,
 * a fresh one is opened with growing back-off and, once it is listening and
 * its probe arrived, every watch gets `resync`: what was announced in
 * between is lost, and the watchers re-read.
 */
export function createPostgresWatcher(
  options: ResolvedPostgresOptions,
  pool: Connection,
  channel: string,
  namespace: string,
  assertOpen: () => void,
  hooks: WatcherHooks = {},
): PostgresWatcher {
  const watches = createWatchSet()
  let listener: pg.Client | undefined
  /** The server process of the listen connection (what the interrupt seam terminates). */
  let listenerPid: number | undefined
  let listening = false
  /** Whether a listen connection ever confirmed its probe (a later failure is a lost connection). */
  let confirmedOnce = false
  let retry: NodeJS.Timeout | undefined
  let attempt = 0
  let connecting = false
  // Bumped whenever the connection is dropped on purpose: a connect still in
  // flight then finds itself stale and closes what it opened.
  let generation = 0
  const probes = new Map<string, () => void>()
  const dropped = new Set<() => void>()
  const connectionString = options.listenConnectionString ?? options.connectionString
  /** Watches waiting for their first hint (failed when the first listen connection cannot work). */
  const pendingStreams = new Set<{ fail(error: unknown): void }>()
  /** Watches that never had a hint (the only ones the no-resync mutant still starts). */
  const fresh = new Set<{ resync(): void }>()

  function drop(): void {
    generation++
    listening = false
    clearTimeout(retry)
    retry = undefined
    const old = listener
    listener = undefined
    void old?.end().catch(() => {})
  }

  function schedule(): void {
    if (watches.size === 0 || retry !== undefined) return
    const delay = Math.min(50 * 2 ** attempt, MAX_RETRY_MS)
    attempt++
    retry = setTimeout(() => {
      retry = undefined
      void connect()
    }, delay)
  }

  function onNotification(message: pg.Notification): void {
    const payload = message.payload ?? ''
    if (payload.startsWith(PROBE_PREFIX)) {
      probes.get(payload)?.()
      return
    }
    const slash = payload.indexOf('/')
    if (slash < 0 || payload.slice(0, slash) !== namespace) return
    const key = payload.slice(slash + 1)
    // `<namespace>/` without a key: destroy() emptied the namespace.
    if (key === '') watches.prefixChanged('')
    else watches.key(key)
  }

  /**
   * Sends a probe through the pool; resolves how it ended ({@link ProbeOutcome}). Its statement is not declared (answer-check.ts): a
   * pooler's foreign answer to it (PgBouncer 1.18, see the README) must not
   * fail the probe, since the statement still runs and notifies once the
   * dead client's statements are done, where a failed probe on a first
   * connection is a false "no notifications" error. It checks its answer
   * itself instead (its own payload comes back in it): after a foreign
   * answer, the dead client's later answers and then the probe's own are
   * still to come on that connection, and the next statement sent on it
   * would take them for its own. So the probe keeps the connection until its
   * notification arrived (its own answer was sent with its commit) and
   * {@link FOREIGN_ANSWER_GRACE_MS} more, then has it discarded.
   */
  async function probe(): Promise<ProbeOutcome> {
    const payload = `${PROBE_PREFIX}${randomUUID()}`
    let timer: NodeJS.Timeout | undefined
    let came = false
    let answered = false
    const arrived = new Promise<boolean>((resolve) => {
      probes.set(payload, () => {
        came = true
        resolve(true)
      })
      timer = setTimeout(() => resolve(false), options.connectTimeoutMs)
    })
    try {
      await pool.use('watch', false, async (client, discard) => {
        const answer = await client.query(PROBE_STATEMENT, [channel, payload])
        answered = isOwnProbeAnswer(answer, payload)
        if (answered || hooks.holdAfterForeignAnswer === false) return
        discard()
        if (await arrived)
          await new Promise((resolve) => setTimeout(resolve, FOREIGN_ANSWER_GRACE_MS))
      })
      if (await arrived) return 'arrived'
      return answered || hooks.probeFailureIsSilence === true ? 'silent' : 'failed'
    } catch {
      if (came) return 'arrived'
      return hooks.probeFailureIsSilence === true ? 'silent' : 'failed'
    } finally {
      clearTimeout(timer)
      probes.delete(payload)
    }
  }

  async function connect(): Promise<void> {
    const mine = ++generation
    connecting = true
    const client = new pg.Client({
      connectionString,
      application_name: LISTEN_APPLICATION_NAME,
      connectionTimeoutMillis: options.connectTimeoutMs,
      keepAlive: true,
      ...(options.ssl === undefined ? {} : { ssl: options.ssl as pg.ClientConfig['ssl'] }),
    })
    // Errors end in 'end', which is handled; unhandled ones would crash the process.
    client.on('error', () => {})
    client.on('notification', onNotification)
    client.on('end', () => {
      for (const wake of dropped) wake()
      dropped.clear()
      if (listener !== client) return
      listener = undefined
      listening = false
      schedule()
    })
    listener = client
    let outcome: ProbeOutcome = 'failed'
    let pid: number | undefined
    try {
      await client.connect()
      await client.query(`LISTEN "${channel}"`)
      pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid
      if (mine === generation) outcome = hooks.probe === false ? 'arrived' : await probe()
    } catch {
      outcome = 'failed'
    } finally {
      connecting = false
    }
    if (mine !== generation || watches.size === 0) {
      if (listener === client) listener = undefined
      void client.end().catch(() => {})
      return
    }
    if (outcome !== 'arrived') {
      if (!confirmedOnce && listener === client && pid !== undefined && outcome === 'silent') {
        // Connected and listening, yet the probe never came back: notifications
        // cannot reach this connection. A configuration error, said loudly.
        listener = undefined
        void client.end().catch(() => {})
        const error = new AgentStateError(
          'UNAVAILABLE',
          'PostgreSQL LISTEN receives no notifications on this connection (a transaction-pooling PgBouncer in between?): give the backend a direct server connection for LISTEN (listenConnectionString, or the URL parameters listenHost/listenPort), or set changeNotification to false',
          { context: { channel }, retryable: false },
        )
        for (const stream of pendingStreams) stream.fail(error)
        pendingStreams.clear()
        if (watches.size > 0) schedule()
        return
      }
      if (listener === client) {
        listener = undefined
        void client.end().catch(() => {})
      }
      schedule()
      return
    }
    attempt = 0
    listenerPid = pid
    listening = true
    confirmedOnce = true
    pendingStreams.clear()
    // New watches get their first hint; watches that outlived a lost connection re-read.
    if (hooks.resyncOnReconnect === false) {
      for (const stream of fresh) stream.resync()
    } else watches.resync()
    fresh.clear()
  }

  return {
    watch(prefix, watchOptions) {
      try {
        assertOpen()
        assertWatchPrefix(prefix)
      } catch (error) {
        return failedWatch(error)
      }
      const stream = watches.open(prefix, {
        signal: watchOptions?.signal,
        onEnd() {
          pendingStreams.delete(stream)
          fresh.delete(stream)
          if (watches.size === 0) drop()
        },
      })
      if (stream.ended) return stream
      if (listening) {
        stream.resync()
        return stream
      }
      pendingStreams.add(stream)
      fresh.add(stream)
      // An attempt still in flight after a drop (its last watch ended) is stale: it never becomes
      // the listener (and a client ended mid-connect may never settle), so do not wait for it.
      const waitForStale = hooks.connectForLateWatches === false && connecting
      if (listener === undefined && retry === undefined && !waitForStale) void connect()
      return stream
    },
    async interrupt() {
      const pid = listenerPid
      if (listener === undefined || !listening || pid === undefined) return
      const gone = new Promise<void>((resolve) => {
        dropped.add(resolve)
        setTimeout(resolve, options.connectTimeoutMs).unref()
      })
      await pool.use('watch interrupt', false, (c) =>
        c.query('SELECT pg_terminate_backend($1)', [pid]),
      )
      await gone
    },
    async close() {
      watches.endAll()
      drop()
    },
  }
}
