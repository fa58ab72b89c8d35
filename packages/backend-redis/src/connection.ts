import { createHash } from 'node:crypto'
import { AgentStateError } from '@agent-state/core'
import { Cluster, Redis } from 'ioredis'
import { connectionPlan, type PoolMember, pickWriter } from './connection-pool.js'
import { mapRedisError, sanitizeError } from './errors.js'
import { keySlot } from './key-slot.js'
import type { LuaScript } from './lua-scripts.js'
import type { ResolvedRedisOptions } from './options.js'
import { quietSentinelConnector } from './sentinel-connector.js'
import { createSharedWait, type SharedWait } from './shared-wait.js'

type Client = Redis | Cluster
type Arg = string | Buffer

/**
 * One lazily opened ioredis client (single server or Cluster) with the
 * settings that make failures quick and classifiable:
 * - `enableOfflineQueue: false`: a command is written at once or refused
 *   (`UNAVAILABLE`); nothing waits in a queue to be sent later;
 * - `maxRetriesPerRequest: 0` and `autoResendUnfulfilledCommands: false`: a
 *   command in flight when the connection drops is rejected (`INDETERMINATE`)
 *   instead of being silently re-sent after reconnecting;
 * - `commandTimeout`: a command without a reply fails (`INDETERMINATE`).
 * An operation issued while the client is not ready waits up to
 * `connectTimeoutMs` for it, then fails `UNAVAILABLE`. A wait that fails
 * (refused, wrong password, timeout) also disconnects and drops the client:
 * ioredis would otherwise reconnect in the background forever, keeping the
 * process alive and, after a refused password, re-sending it several times a
 * second. The next operation opens a fresh client (one attempt per call).
 */
export interface RedisConnection {
  /**
   * Runs a script by SHA, loading it with EVAL on `NOSCRIPT`. String replies.
   * For what needs no replica acknowledgement (reads, `destroy`): under
   * `replication` it goes on a connection of its own that never carries a
   * `WAIT`, so it never waits behind one (`WAIT` blocks its socket). A read
   * issued after a write resolved still sees it: both run on the one primary.
   */
  script(
    script: LuaScript,
    operation: string,
    keys: readonly string[],
    args: readonly Arg[],
  ): Promise<unknown>
  /**
   * Runs a mutating script. With `replication` set, `acked` is the reply of
   * a `WAIT replicas timeoutMs` written after the script on the same socket
   * (0 if it failed); otherwise `acked` is `undefined`. On a single server or
   * behind Sentinel one `WAIT` covers every script concurrent writers wrote
   * before it on the same connection (`shared-wait.ts`), and on a single
   * server writes spread over a small pool of connections so that a write
   * rarely waits for a `WAIT` already in flight (`connection-pool.ts`;
   * behind Sentinel one connection, see `connectionPlan`). In Cluster mode the
   * script goes straight to the connection of its slot's owner (per the
   * client's slot map) and shares that connection's `WAIT`; when that
   * connection is not ready or the node redirects, the script and its own
   * `WAIT` go in one pipeline through the Cluster client.
   */
  mutate(
    script: LuaScript,
    operation: string,
    keys: readonly string[],
    args: readonly Arg[],
  ): Promise<{ reply: unknown; acked: number | undefined }>
  /**
   * `CONFIG GET name` on the server, or on every Cluster primary: one value
   * per node; `undefined` where CONFIG is refused (disabled, renamed, ACL).
   */
  configGet(operation: string, name: string): Promise<(string | undefined)[]>
  /** `HMGET` with Buffer replies (a read: on the same connection as `script`). */
  hmgetBuffer(operation: string, key: string, fields: readonly string[]): Promise<(Buffer | null)[]>
  /**
   * One `HMGET` of `fields` per key, with Buffer replies, all written at once
   * in one pipeline (one socket write, one round trip) on the connection of
   * `hmgetBuffer`. The keys must share one Cluster slot (every key of a
   * namespace does: one hash tag), so on a Cluster the pipeline goes to the
   * one node that owns it. Not atomic across keys: another client's command
   * may run between two of the `HMGET`s. Any command's error fails the call
   * (mapped as `hmgetBuffer`'s).
   */
  hmgetManyBuffer(
    operation: string,
    keys: readonly string[],
    fields: readonly string[],
  ): Promise<(Buffer | null)[][]>
  /**
   * A new dedicated client (not yet connected) for `SSUBSCRIBE` to `channel`,
   * on the server that serves it: the single server, the Sentinel primary,
   * or in Cluster mode the primary of the channel's slot (from the main
   * client's slot map). It never reconnects by itself (`retryStrategy` null):
   * its owner (the watch) replaces it, so every reconnect is seen and
   * becomes a resync.
   */
  subscriber(operation: string, channel: string): Promise<Redis>
  /** Quits politely, then disconnects. Idempotent. */
  close(): Promise<void>
}

const sha1 = (source: string) => createHash('sha1').update(source).digest('hex')

/** Opens (lazily) the connection described by `options`. */
export function createRedisConnection(options: ResolvedRedisOptions): RedisConnection {
  const secrets = [options.password ?? '', options.sentinel?.password ?? ''].filter(
    (secret) => secret.length > 0,
  )
  const shas = new Map<LuaScript, string>()
  /** Each single-server client's shared WAIT, with `replication` (keyed by client: never another's). */
  const sharedWaits = new WeakMap<Client, SharedWait>()
  let closed = false

  /** Per-connection settings shared by a single server and every Cluster node. */
  function nodeOptions() {
    return {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: options.commandTimeoutMs,
      connectTimeout: options.connectTimeoutMs,
      ...(options.username === undefined ? {} : { username: options.username }),
      ...(options.password === undefined ? {} : { password: options.password }),
      ...(options.tls ? { tls: {} } : {}),
    }
  }

  /**
   * One lazily opened client, replaced by a fresh one after it failed to
   * become ready. Without `replication` the connection is this one slot;
   * with it, writes go to a small pool of slots and everything that needs
   * no acknowledgement to one more (`reads`), so it never waits behind a
   * `WAIT` (which blocks the socket it is sent on).
   */
  function createSlot() {
    let client: Client | undefined
    let lastError: Error | undefined

    function open(): Client {
      if (client !== undefined) return client
      const sentinel = options.sentinel
      const created: Client =
        sentinel !== undefined
          ? new Redis({
              ...nodeOptions(),
              enableOfflineQueue: false,
              retryStrategy: (attempt: number) => Math.min(attempt * 50, 500),
              sentinels: sentinel.nodes.map((node) => ({ host: node.host, port: node.port })),
              name: sentinel.name,
              db: options.db,
              // Reconnect to the new primary as soon as a Sentinel announces the switch.
              failoverDetector: true,
              ...(sentinel.password === undefined ? {} : { sentinelPassword: sentinel.password }),
              // An unreachable Sentinel's errors are kept (sanitized) like the primary's, never printed.
              Connector: quietSentinelConnector((error, address) => {
                const copy = sanitizeError(error, secrets)
                copy.message = `Sentinel ${address}: ${copy.message}`
                lastError = copy
              }),
            })
          : options.cluster === undefined
            ? new Redis({
                ...nodeOptions(),
                enableOfflineQueue: false,
                retryStrategy: (attempt: number) => Math.min(attempt * 50, 500),
                host: options.host,
                port: options.port,
                db: options.db,
              })
            : new Cluster(
                options.cluster.nodes.map((node) => ({ host: node.host, port: node.port })),
                {
                  lazyConnect: true,
                  enableOfflineQueue: false,
                  maxRedirections: 16,
                  retryDelayOnFailover: 100,
                  clusterRetryStrategy: (attempt: number) => Math.min(attempt * 100, 1000),
                  redisOptions: nodeOptions(),
                },
              )
      // Every operation waiting for readiness adds three listeners and removes them when it settles
      // (see `ready`), so 64 concurrent first operations are not a leak: no MaxListeners warning.
      created.setMaxListeners(0)
      // ioredis prints unhandled 'error' events; keep the last one (sanitized) for messages instead.
      created.on('error', (error: unknown) => {
        lastError = sanitizeError(error, secrets)
      })
      client = created
      if (options.replication !== undefined && created instanceof Redis) {
        sharedWaits.set(created, createSharedWait(created, options.replication))
      }
      return created
    }

    /**
     * Stops a client that failed to become ready: no reconnect timer, no socket.
     * Waiters still on it see its 'end' and fail with its last error.
     */
    function abandon(c: Client): void {
      if (client === c) client = undefined
      c.disconnect()
    }

    /** Resolves the client once ready; rejects `UNAVAILABLE` (or `CLOSED`). */
    async function ready(operation: string): Promise<Client> {
      if (closed) throw new AgentStateError('CLOSED', 'The redis backend is closed')
      const c = open()
      if (c.status === 'ready') return c
      if (c.status === 'wait') c.connect().catch(() => {})
      try {
        await waitUntilReady(c, operation)
      } catch (error) {
        abandon(c)
        throw error
      }
      return c
    }

    function waitUntilReady(c: Client, operation: string): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        const cleanup = () => {
          clearTimeout(timer)
          c.off('ready', onReady)
          c.off('error', onError)
          c.off('end', onEnd)
        }
        const onReady = () => {
          cleanup()
          resolve()
        }
        const onError = (error: unknown) => {
          cleanup()
          reject(mapRedisError(error, { operation, mayHaveApplied: false }, secrets))
        }
        const onEnd = () => {
          cleanup()
          reject(
            closed
              ? new AgentStateError('CLOSED', 'The redis backend is closed')
              : mapRedisError(
                  lastError ?? new Error('connection ended'),
                  { operation, mayHaveApplied: false },
                  secrets,
                ),
          )
        }
        const timer = setTimeout(() => {
          cleanup()
          reject(
            mapRedisError(
              lastError ?? new Error(`not ready after ${options.connectTimeoutMs} ms`),
              { operation, mayHaveApplied: false },
              secrets,
            ),
          )
        }, options.connectTimeoutMs)
        c.on('ready', onReady)
        c.on('error', onError)
        c.on('end', onEnd)
        if (c.status === 'ready') onReady()
        else if (c.status === 'end') onEnd()
      })
    }

    return {
      ready,
      /** The client when it is ready now: operations then skip the (async) readiness wait. */
      readyNow(): Client | undefined {
        const c = client
        return !closed && c !== undefined && c.status === 'ready' ? c : undefined
      },
      /** Quits politely (1 s at most), then disconnects. */
      async close(): Promise<void> {
        const c = client
        if (c === undefined) return
        if (c.status === 'ready') {
          let timer: NodeJS.Timeout | undefined
          await Promise.race([
            c.quit().catch(() => {}),
            new Promise<void>((resolve) => {
              timer = setTimeout(resolve, 1000)
            }),
          ])
          clearTimeout(timer)
        }
        c.disconnect()
      },
    }
  }

  const plan = connectionPlan({
    replication: options.replication !== undefined,
    cluster: options.cluster !== undefined,
    sentinel: options.sentinel !== undefined,
  })
  /** Writes, and without `replication` everything. */
  const main = createSlot()
  /** Under `replication`: what needs no acknowledgement (reads, unconfirmed scripts). */
  const reads = plan.readsApart ? createSlot() : main
  /** Under `replication` on a single server: the write pool (`connection-pool.ts`). */
  const writers = [main, ...Array.from({ length: plan.writers - 1 }, () => createSlot())]
  const slots = [...new Set([main, reads, ...writers])]

  function shaOf(script: LuaScript): string {
    let sha = shas.get(script)
    if (sha === undefined) {
      sha = sha1(script.source)
      shas.set(script, sha)
    }
    return sha
  }

  /** EVALSHA, then EVAL on `NOSCRIPT`; no async wrapper, so the common path costs no extra promise. */
  function evalScript(
    c: Client,
    script: LuaScript,
    keys: readonly string[],
    args: readonly Arg[],
  ): Promise<unknown> {
    return c.evalsha(shaOf(script), keys.length, ...keys, ...args).catch((error: unknown) => {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      // Not cached on this server (first use, restart, failover): EVAL loads it.
      return c.eval(script.source, keys.length, ...keys, ...args)
    })
  }

  /**
   * The script, then its confirmation from the connection's shared WAIT
   * (`afterWrite` right after the script is written, so the WAIT that
   * confirms it was written after it).
   */
  async function evalConfirmed(
    c: Redis,
    shared: SharedWait,
    script: LuaScript,
    keys: readonly string[],
    args: readonly Arg[],
  ): Promise<{ reply: unknown; acked: number }> {
    const sent = c.evalsha(shaOf(script), keys.length, ...keys, ...args)
    let acked = shared.afterWrite()
    let reply: unknown
    try {
      reply = await sent
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error
      // Not cached on this server: EVAL loads it, and the WAIT must come after this write.
      const loaded = c.eval(script.source, keys.length, ...keys, ...args)
      acked = shared.afterWrite()
      reply = await loaded
    }
    return { reply, acked: await acked }
  }

  /**
   * Cluster mode under `replication`: the connection of the primary that owns
   * `key`'s slot in the client's slot map, with its shared WAIT, when it is
   * ready (else the script goes through the Cluster client's pipeline).
   */
  function slotOwner(
    c: Cluster,
    key: string | undefined,
  ): { node: Redis; shared: SharedWait } | undefined {
    const replication = options.replication
    if (key === undefined || replication === undefined) return undefined
    const owner = c.slots[keySlot(key)]?.[0]
    const node = c
      .nodes('master')
      .find((candidate) => `${candidate.options.host}:${candidate.options.port}` === owner)
    if (node === undefined || node.status !== 'ready') return undefined
    let shared = sharedWaits.get(node)
    if (shared === undefined) {
      shared = createSharedWait(node, replication)
      sharedWaits.set(node, shared)
    }
    return { node, shared }
  }

  /**
   * Cluster mode: the script, then WAIT, in one pipeline: one write on one socket, so a
   * reconnect cannot slip between them (WAIT on a fresh connection would
   * confirm nothing and report success).
   */
  async function evalAndWait(
    c: Client,
    script: LuaScript,
    keys: readonly string[],
    args: readonly Arg[],
    replication: { readonly replicas: number; readonly timeoutMs: number },
  ): Promise<{ reply: unknown; acked: number }> {
    const sha = shaOf(script)
    const once = async (load: boolean) => {
      const p = c.pipeline()
      if (load) p.eval(script.source, keys.length, ...keys, ...args)
      else p.evalsha(sha, keys.length, ...keys, ...args)
      p.wait(replication.replicas, replication.timeoutMs)
      const results = await p.exec()
      const [scriptResult, waitResult] = results ?? []
      if (scriptResult === undefined || waitResult === undefined) {
        throw new Error('pipeline returned no results')
      }
      return { scriptResult, waitResult }
    }
    let { scriptResult, waitResult } = await once(false)
    const first = scriptResult[0]
    if (first instanceof Error && first.message.startsWith('NOSCRIPT')) {
      ;({ scriptResult, waitResult } = await once(true))
    }
    if (scriptResult[0]) throw scriptResult[0]
    // The script ran; if WAIT itself failed, nothing is confirmed.
    const acked = waitResult[0] ? 0 : Number(waitResult[1])
    return { reply: scriptResult[1], acked: Number.isFinite(acked) ? acked : 0 }
  }

  /**
   * The write connection for the next script under `replication` on a
   * single server or Sentinel (`pickWriter`; behind Sentinel the pool is one), opening another pool member
   * when every ready one has a `WAIT` in flight.
   */
  async function writer(operation: string): Promise<PoolMember<Redis>> {
    const members: PoolMember<Redis>[] = []
    let spare: (typeof writers)[number] | undefined
    for (const slot of writers) {
      const c = slot.readyNow()
      const shared = c === undefined ? undefined : sharedWaits.get(c)
      if (c instanceof Redis && shared !== undefined) members.push({ client: c, shared })
      else spare ??= slot
    }
    const picked = pickWriter(members, spare !== undefined)
    if (picked !== undefined) return picked
    let c: Client
    try {
      c = await (spare ?? main).ready(operation)
    } catch (error) {
      // Another connection could not be opened: queue behind a WAIT on one already open.
      const fallback = pickWriter(members, false)
      if (fallback === undefined) throw error
      return fallback
    }
    const shared = sharedWaits.get(c)
    if (!(c instanceof Redis) || shared === undefined) throw new Error('no shared WAIT')
    return { client: c, shared }
  }

  /** {@link RedisConnection.hmgetManyBuffer}'s pipeline; rejects with the first command's error. */
  async function hmgetPipeline(
    c: Client,
    keys: readonly string[],
    fields: readonly string[],
  ): Promise<(Buffer | null)[][]> {
    const pipeline = c.pipeline()
    for (const key of keys) pipeline.hmgetBuffer(key, ...fields)
    const results = (await pipeline.exec()) ?? []
    if (results.length !== keys.length) throw new Error('pipeline returned no results')
    return results.map(([error, fieldValues]) => {
      if (error) throw error
      return fieldValues as (Buffer | null)[]
    })
  }

  return {
    script(script, operation, keys, args) {
      const fail = (error: unknown) => {
        throw mapRedisError(error, { operation, mayHaveApplied: true }, secrets)
      }
      const now = reads.readyNow()
      if (now !== undefined) return evalScript(now, script, keys, args).catch(fail)
      return reads.ready(operation).then((c) => evalScript(c, script, keys, args).catch(fail))
    },

    async mutate(script, operation, keys, args) {
      const replication = options.replication
      if (replication !== undefined && options.cluster === undefined) {
        const { client: c, shared } = await writer(operation)
        try {
          return await evalConfirmed(c, shared, script, keys, args)
        } catch (error) {
          throw mapRedisError(error, { operation, mayHaveApplied: true }, secrets)
        }
      }
      const c = await main.ready(operation)
      try {
        if (replication === undefined) {
          return { reply: await evalScript(c, script, keys, args), acked: undefined }
        }
        const owner = c instanceof Cluster ? slotOwner(c, keys[0]) : undefined
        if (owner !== undefined) {
          const confirmed = await evalConfirmed(owner.node, owner.shared, script, keys, args).catch(
            (error: unknown) => {
              // Not run there (slot moved, cluster down): the Cluster client's redirections decide.
              if (
                error instanceof Error &&
                /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/.test(error.message)
              ) {
                return undefined
              }
              throw error
            },
          )
          if (confirmed !== undefined) return confirmed
        }
        return await evalAndWait(c, script, keys, args, replication)
      } catch (error) {
        throw mapRedisError(error, { operation, mayHaveApplied: true }, secrets)
      }
    },

    async configGet(operation, name) {
      const c = await main.ready(operation)
      const nodes: Redis[] = c instanceof Cluster ? c.nodes('master') : [c]
      try {
        return await Promise.all(
          nodes.map(async (node) => {
            try {
              const reply = (await node.call('CONFIG', 'GET', name)) as unknown
              return Array.isArray(reply) && typeof reply[1] === 'string' ? reply[1] : undefined
            } catch (error) {
              // A refusal (CONFIG disabled or not allowed) is an answer: unknown.
              if (error instanceof Error && error.name === 'ReplyError') return undefined
              throw error
            }
          }),
        )
      } catch (error) {
        throw mapRedisError(error, { operation, mayHaveApplied: true }, secrets)
      }
    },

    hmgetBuffer(operation, key, fields) {
      const fail = (error: unknown) => {
        throw mapRedisError(error, { operation, mayHaveApplied: true }, secrets)
      }
      const now = reads.readyNow()
      if (now !== undefined) return now.hmgetBuffer(key, ...fields).catch(fail)
      return reads.ready(operation).then((c) => c.hmgetBuffer(key, ...fields).catch(fail))
    },

    hmgetManyBuffer(operation, keys, fields) {
      const fail = (error: unknown) => {
        throw mapRedisError(error, { operation, mayHaveApplied: true }, secrets)
      }
      const now = reads.readyNow()
      if (now !== undefined) return hmgetPipeline(now, keys, fields).catch(fail)
      return reads.ready(operation).then((c) => hmgetPipeline(c, keys, fields).catch(fail))
    },

    async subscriber(operation, channel) {
      const once = { ...nodeOptions(), retryStrategy: () => null, autoResubscribe: false }
      const sentinel = options.sentinel
      if (sentinel !== undefined) {
        return new Redis({
          ...once,
          sentinels: sentinel.nodes.map((node) => ({ host: node.host, port: node.port })),
          name: sentinel.name,
          ...(sentinel.password === undefined ? {} : { sentinelPassword: sentinel.password }),
          Connector: quietSentinelConnector(() => {}),
        })
      }
      if (options.cluster === undefined) {
        return new Redis({ ...once, host: options.host, port: options.port, db: options.db })
      }
      const c = (await main.ready(operation)) as Cluster
      try {
        const slot = Number(await c.call('CLUSTER', 'KEYSLOT', channel))
        const node = c.slots[slot]?.[0]
        if (node === undefined) throw new Error(`no node serves slot ${slot}`)
        const at = node.lastIndexOf(':')
        return new Redis({ ...once, host: node.slice(0, at), port: Number(node.slice(at + 1)) })
      } catch (error) {
        throw mapRedisError(error, { operation, mayHaveApplied: false }, secrets)
      }
    },

    async close() {
      if (closed) return
      closed = true
      await Promise.all(slots.map((slot) => slot.close()))
    },
  }
}
