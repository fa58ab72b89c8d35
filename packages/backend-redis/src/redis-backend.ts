import {
  type Backend,
  type Capabilities,
  CONTRACT_VERSION,
  MAX_KEY_BYTES,
  MAX_LEASE_TTL_MS,
  parseBackendOptions,
  setWatchInterrupt,
} from '@agent-state/core'
import { createRedisWatcher, REDIS_CHANGE_NOTIFICATION } from './change-notification.js'
import { createRedisConnection } from './connection.js'
import { redisGetMany } from './get-many.js'
import { redisKeyLayout } from './key-layout.js'
import { leaseOperations } from './lease-operations.js'
import { DESTROY } from './lua-scripts.js'
import { nativeQueueOperations, REDIS_NATIVE_QUEUE } from './native-queue.js'
import { createOperationContext } from './operation-context.js'
import { type RedisBackendOptions, redisOptionsSchema } from './options.js'
import { valueOperations } from './value-operations.js'

const DESTROY_BATCH = 500

/**
 * Creates the Redis backend: every conditional operation is one Lua script on
 * the server (lease expiry on the server's clock), listings come from a
 * byte-ordered sorted-set index updated in the same script, and all keys of a
 * namespace share one hash tag so it also runs on Redis Cluster. Connects on
 * the first operation.
 *
 * @throws `INVALID_ARGUMENT` for invalid options.
 */
export function createRedisBackend(options: RedisBackendOptions = {}): Backend {
  return create(options).backend
}

/**
 * Like {@link createRedisBackend}, but connects first and, unless the
 * `durable` option declares it, sets `capabilities.durable` from the server:
 * true only when every primary runs with `appendonly yes`. A server that
 * refuses `CONFIG GET` (managed services) is reported not durable; declare
 * `durable` there.
 *
 * @throws `INVALID_ARGUMENT` for invalid options; `UNAVAILABLE` when the server cannot be reached.
 */
export async function openRedisBackend(options: RedisBackendOptions = {}): Promise<Backend> {
  const { backend, probe } = create(options)
  try {
    await probe()
  } catch (error) {
    await backend.close()
    throw error
  }
  return backend
}

function create(options: RedisBackendOptions): { backend: Backend; probe: () => Promise<void> } {
  const resolved = parseBackendOptions(redisOptionsSchema, options, 'Redis')
  const layout = redisKeyLayout(resolved.keyPrefix, resolved.namespace)
  const connection = createRedisConnection(resolved)
  let durable = resolved.durable
  const capabilities: Capabilities = {
    // Declared, probed, or false: never assumed.
    get durable() {
      return durable ?? false
    },
    multiProcess: true,
    multiHost: true,
    leaseClock: 'server',
    maxKeyBytes: MAX_KEY_BYTES,
    maxValueBytes: resolved.maxValueBytes,
    changeNotification: REDIS_CHANGE_NOTIFICATION,
    nativeQueue: REDIS_NATIVE_QUEUE,
    // Every key of a namespace shares one hash tag (one Cluster slot), so one script reads the
    // fence key's lease and writes the value atomically on every topology (FENCED_PUT).
    crossKeyFence: true,
  }
  let closed = false
  const ctx = createOperationContext(resolved, connection, layout, capabilities, () => closed)
  const watcher = createRedisWatcher(connection, layout.changes, ctx.assertOpen)
  const values = valueOperations(ctx)
  // Under replication every grant is on the replicas before it is acknowledged: no hold needed.
  const hold =
    resolved.replication === undefined
      ? {
          on: true,
          holdMs: Math.max(resolved.promotionHoldMs ?? 0, resolved.maxLeaseTtlMs ?? 0),
          maxLeaseTtlMs: resolved.maxLeaseTtlMs ?? MAX_LEASE_TTL_MS,
        }
      : { on: false, holdMs: 0, maxLeaseTtlMs: MAX_LEASE_TTL_MS }
  const leases = leaseOperations(ctx, hold)

  const backend: Backend = {
    contractVersion: CONTRACT_VERSION,
    name: 'redis',
    capabilities,
    get: values.get,
    getMany: redisGetMany(ctx),
    head: values.head,
    put: values.put,
    delete: values.delete,
    list: values.list,
    acquireLease: leases.acquireLease,
    renewLease: leases.renewLease,
    releaseLease: leases.releaseLease,
    getLease: leases.getLease,
    watch: watcher.watch,
    nativeQueue: nativeQueueOperations(ctx, hold),

    async destroy(): Promise<void> {
      ctx.assertOpen()
      for (;;) {
        const removed = await connection.script(
          DESTROY,
          'destroy',
          [layout.records, layout.index, layout.meta],
          [layout.recordPrefix, String(DESTROY_BATCH), layout.changes],
        )
        if (removed === 0) return
      }
    },

    async close(): Promise<void> {
      if (closed) return
      closed = true
      watcher.close()
      await connection.close()
    },
  }
  async function probe(): Promise<void> {
    if (resolved.durable !== undefined) return
    const found = await connection.configGet('open', 'appendonly')
    durable = found.length > 0 && found.every((value) => value === 'yes')
  }
  setWatchInterrupt(backend, async () => watcher.interrupt())
  return { backend, probe }
}
