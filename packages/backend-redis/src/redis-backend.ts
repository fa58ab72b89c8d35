import {
  type AcquireLeaseOptions,
  AgentStateError,
  assertLeaseShape,
  assertValidKey,
  type Backend,
  type Capabilities,
  CONTRACT_VERSION,
  checkAcquire,
  checkDelete,
  checkPut,
  collectListPage,
  type DeleteOptions,
  type Lease,
  type ListEntry,
  type ListOptions,
  type ListPage,
  normalizeListOptions,
  type PutOptions,
  randomSuffix,
  type StoredValue,
  type ValueMeta,
} from '@agent-state/core'
import { createRedisConnection } from './connection.js'
import {
  ACQUIRE,
  DELETE,
  DESTROY,
  GET_LEASE,
  HEAD,
  PUT,
  RELEASE,
  RENEW,
  SCAN,
} from './lua-scripts.js'
import { type RedisBackendOptions, redisOptionsSchema, resolveOptions } from './options.js'
import { indexBounds, redisKeyLayout } from './redis-keys.js'
import {
  corrupt,
  leaseIdOf,
  parseWriter,
  reply,
  sizeOfVersion,
  throwWriteFailure,
  toNumber,
} from './script-replies.js'

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
  const parsed = redisOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `Invalid redis backend options: ${issue?.path.join('.')}: ${issue?.message}`,
      { context: { path: issue?.path.join('.') } },
    )
  }
  const resolved = resolveOptions(options)
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
    maxKeyBytes: 1024,
    maxValueBytes: resolved.maxValueBytes,
  }
  let closed = false

  function assertOpen(): void {
    if (closed) throw new AgentStateError('CLOSED', 'The redis backend is closed')
  }

  /**
   * Runs a mutating script. Under `replication`, a successful reply (`OK`, or
   * 1 from release) counts only when enough replicas confirmed it; a refusal
   * (precondition, lease) wrote nothing, so it stands without confirmation.
   */
  async function mutate(
    script: typeof PUT,
    operation: string,
    key: string,
    keys: readonly string[],
    args: readonly (string | Buffer)[],
  ): Promise<unknown> {
    assertOpen()
    const { reply: raw, acked } = await connection.mutate(script, operation, keys, args)
    const succeeded = raw === 1 || (Array.isArray(raw) && raw[0] === 'OK')
    const required = resolved.replication?.replicas
    if (succeeded && required !== undefined && (acked ?? 0) < required) {
      throw new AgentStateError(
        'INDETERMINATE',
        `${operation} of ${JSON.stringify(key)} was applied on the primary but confirmed by ${acked ?? 0} of ${required} replicas: it may be lost in a failover`,
        { retryable: true, context: { key, operation, acked: acked ?? 0, required } },
      )
    }
    return raw
  }

  async function run(
    script: typeof PUT,
    operation: string,
    key: string,
    keys: readonly string[],
    args: readonly (string | Buffer)[],
  ): Promise<string[]> {
    assertOpen()
    return reply(await connection.script(script, operation, keys, args), key)
  }

  const backend: Backend = {
    contractVersion: CONTRACT_VERSION,
    name: 'redis',
    capabilities,

    async get(key: string): Promise<StoredValue | null> {
      assertOpen()
      assertValidKey(key, capabilities.maxKeyBytes)
      const [v, d, w, t] = await connection.hmgetBuffer('get', layout.record(key), [
        'v',
        'd',
        'w',
        't',
      ])
      if (v === null || v === undefined) return null
      if (d === null || d === undefined) throw corrupt(key, 'value missing')
      // Copy: reply buffers may share memory with other replies.
      const value = new Uint8Array(d)
      return {
        value,
        meta: {
          key,
          version: v.toString(),
          size: value.byteLength,
          writer: parseWriter(key, w),
          updatedAt: toNumber(key, t?.toString(), 't'),
        },
      }
    },

    async head(key: string): Promise<ValueMeta | null> {
      assertOpen()
      assertValidKey(key, capabilities.maxKeyBytes)
      // One plain HMGET when the version carries the size (written by 0.2+).
      const [v, w, t] = await connection.hmgetBuffer('head', layout.record(key), ['v', 'w', 't'])
      if (v === null || v === undefined) return null
      const version = v.toString()
      const size = sizeOfVersion(version)
      if (size !== undefined) {
        return {
          key,
          version,
          size,
          writer: parseWriter(key, w),
          updatedAt: toNumber(key, t?.toString(), 't'),
        }
      }
      // A 0.1 version: measure the value in the same atomic step as the rest.
      const r = await run(HEAD, 'head', key, [layout.record(key)], [])
      if (r[0] === 'NONE') return null
      return {
        key,
        version: r[1] as string,
        size: toNumber(key, r[2], 'size'),
        writer: parseWriter(key, r[3]),
        updatedAt: toNumber(key, r[4], 't'),
      }
    },

    async put(key: string, value: Uint8Array, putOptions?: PutOptions): Promise<ValueMeta> {
      assertOpen()
      const writer = checkPut(key, value, putOptions, capabilities)
      const r = reply(
        await mutate(
          PUT,
          'put',
          key,
          [layout.record(key), layout.index, layout.records],
          [
            key,
            Buffer.from(value.buffer, value.byteOffset, value.byteLength),
            writer === null ? '' : JSON.stringify(writer),
            putOptions?.ifMatch ?? '',
            putOptions?.ifNoneMatch === '*' ? '1' : '',
            putOptions?.lease === undefined ? '' : String(putOptions.lease.token),
            randomSuffix(),
            leaseIdOf(putOptions?.lease),
          ],
        ),
        key,
      )
      if (r[0] !== 'OK') throwWriteFailure(key, r, putOptions?.lease)
      return {
        key,
        version: r[1] as string,
        size: value.byteLength,
        writer,
        updatedAt: toNumber(key, r[2], 't'),
      }
    },

    async delete(key: string, deleteOptions?: DeleteOptions): Promise<boolean> {
      assertOpen()
      checkDelete(key, deleteOptions, capabilities.maxKeyBytes)
      const r = reply(
        await mutate(
          DELETE,
          'delete',
          key,
          [layout.record(key), layout.index],
          [
            key,
            deleteOptions?.ifMatch ?? '',
            deleteOptions?.lease === undefined ? '' : String(deleteOptions.lease.token),
            leaseIdOf(deleteOptions?.lease),
          ],
        ),
        key,
      )
      if (r[0] !== 'OK') throwWriteFailure(key, r, deleteOptions?.lease)
      return r[1] === '1'
    },

    async list(listOptions?: ListOptions): Promise<ListPage> {
      assertOpen()
      const normalized = normalizeListOptions(listOptions)
      return collectListPage(normalized, async (position, max) => {
        const [min, upper] = indexBounds(normalized.prefix, position)
        const r = await run(
          SCAN,
          'list',
          '',
          [layout.index],
          [min, upper, String(max), layout.recordPrefix],
        )
        const entries: ListEntry[] = []
        for (let i = 0; i + 3 < r.length; i += 4) {
          const key = r[i] as string
          if (r[i + 1] === '') throw corrupt(key, 'listed in the index without a value')
          entries.push({
            key,
            version: r[i + 1] as string,
            size: toNumber(key, r[i + 2], 'size'),
            updatedAt: toNumber(key, r[i + 3], 't'),
          })
        }
        return { entries, done: entries.length < max }
      })
    },

    async acquireLease(key: string, leaseOptions: AcquireLeaseOptions): Promise<Lease> {
      assertOpen()
      checkAcquire(key, leaseOptions, capabilities.maxKeyBytes)
      const r = reply(
        await mutate(
          ACQUIRE,
          'acquireLease',
          key,
          [layout.record(key), layout.records],
          [key, leaseOptions.holder, String(leaseOptions.ttlMs), randomSuffix() + randomSuffix()],
        ),
        key,
      )
      if (r[0] !== 'OK') throwWriteFailure(key, r, undefined)
      return {
        key,
        holder: leaseOptions.holder,
        token: toNumber(key, r[1], 'lt'),
        ttlMs: leaseOptions.ttlMs,
        expiresAt: toNumber(key, r[2], 'le'),
        leaseId: r[3] as string,
      }
    },

    async renewLease(lease: Lease): Promise<Lease> {
      assertOpen()
      assertLeaseShape(lease)
      assertValidKey(lease.key, capabilities.maxKeyBytes)
      const r = reply(
        await mutate(
          RENEW,
          'renewLease',
          lease.key,
          [layout.record(lease.key)],
          [String(lease.token), leaseIdOf(lease)],
        ),
        lease.key,
      )
      if (r[0] !== 'OK') throwWriteFailure(lease.key, r, lease)
      const renewed: Lease = {
        key: lease.key,
        holder: r[1] as string,
        token: lease.token,
        ttlMs: toNumber(lease.key, r[2], 'lttl'),
        expiresAt: toNumber(lease.key, r[3], 'le'),
      }
      return typeof lease.leaseId === 'string' ? { ...renewed, leaseId: lease.leaseId } : renewed
    },

    async releaseLease(lease: Lease): Promise<boolean> {
      assertOpen()
      assertLeaseShape(lease)
      assertValidKey(lease.key, capabilities.maxKeyBytes)
      const released = await mutate(
        RELEASE,
        'releaseLease',
        lease.key,
        [layout.record(lease.key)],
        [String(lease.token), leaseIdOf(lease)],
      )
      return released === 1
    },

    async getLease(key: string): Promise<Lease | null> {
      assertValidKey(key, capabilities.maxKeyBytes)
      const r = await run(GET_LEASE, 'getLease', key, [layout.record(key)], [])
      if (r[0] === 'NONE') return null
      return {
        key,
        holder: r[1] as string,
        token: toNumber(key, r[2], 'lt'),
        ttlMs: toNumber(key, r[3], 'lttl'),
        expiresAt: toNumber(key, r[4], 'le'),
      }
    },

    async destroy(): Promise<void> {
      assertOpen()
      for (;;) {
        const removed = await connection.script(
          DESTROY,
          'destroy',
          [layout.records, layout.index],
          [layout.recordPrefix, String(DESTROY_BATCH)],
        )
        if (removed === 0) return
      }
    },

    async close(): Promise<void> {
      if (closed) return
      closed = true
      await connection.close()
    },
  }
  async function probe(): Promise<void> {
    if (resolved.durable !== undefined) return
    const values = await connection.configGet('open', 'appendonly')
    durable = values.length > 0 && values.every((value) => value === 'yes')
  }
  return { backend, probe }
}
