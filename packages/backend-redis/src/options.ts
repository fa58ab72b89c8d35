import { DEFAULT_MAX_VALUE_BYTES, namespaceSchema } from '@agent-state/core'
import { z } from 'zod'

const nodeSchema = z.strictObject({
  host: z.string().min(1),
  port: z.number().int().min(1).max(65_535),
})

/** Default largest value: core's 64 MiB, re-exported under this package's name. */
export { DEFAULT_MAX_VALUE_BYTES }

/**
 * Options of `createRedisBackend`, as a zod schema: the only source of
 * {@link RedisBackendOptions} and {@link ResolvedRedisOptions}. Strict: an
 * unknown option (a typo) is `INVALID_ARGUMENT`.
 */
export const redisOptionsSchema = z
  .strictObject({
    /** Server host (single server). Default `127.0.0.1`. */
    host: z.string().min(1).default('127.0.0.1'),
    /** Server port (single server). Default 6379. */
    port: z.number().int().min(1).max(65_535).default(6379),
    /** ACL user name, for `AUTH username password`. */
    username: z.string().optional(),
    /** Password; never shown in errors, `context` or logs. */
    password: z.string().optional(),
    /** Logical database number (single server or Sentinel; Cluster has only db 0). Default 0. */
    db: z.number().int().min(0).max(1_000_000).default(0),
    /** Connect with TLS, as a `rediss://` URL does. Default false. */
    tls: z.boolean().default(false),
    /** Redis Cluster: seed nodes. When set, `host`, `port` and `db` are ignored. */
    cluster: z.strictObject({ nodes: z.array(nodeSchema).min(1) }).optional(),
    /**
     * Redis Sentinel: `nodes` are the Sentinels, `name` the master group,
     * `password` the Sentinels' own password if they require one (never shown).
     * The client asks them for the current primary at connect and after a
     * failover (`+switch-master`). When set, `host` and `port` are ignored;
     * not combinable with `cluster`.
     */
    sentinel: z
      .strictObject({
        nodes: z.array(nodeSchema).min(1),
        name: z.string().min(1).max(256),
        password: z.string().optional(),
      })
      .optional(),
    /**
     * Isolates this instance's keys from other namespaces in the same database.
     * 1 to 128 of `[A-Za-z0-9._-]`, not starting with a dot. Default `"default"`.
     */
    namespace: namespaceSchema.default('default'),
    /** First part of every Redis key this backend writes, 1–64 of `[A-Za-z0-9._-]`. Default `"as"`. */
    keyPrefix: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/)
      .default('as'),
    /**
     * How long an operation waits for the connection to become ready (first
     * connect or reconnect) before failing with `UNAVAILABLE`. Default 5000 ms.
     */
    connectTimeoutMs: z.number().int().min(1).max(600_000).default(5000),
    /**
     * How long a sent command may take before failing with `INDETERMINATE`
     * (it may still be applied). Default 5000 ms.
     */
    commandTimeoutMs: z.number().int().min(1).max(600_000).default(5000),
    /** Largest value accepted, in bytes. Default 64 MiB (Redis allows up to 512 MB). */
    maxValueBytes: z
      .number()
      .int()
      .min(1)
      .max(500 * 1024 * 1024)
      .default(DEFAULT_MAX_VALUE_BYTES),
    /**
     * Durable acknowledgement. When set, every mutating operation (put, delete,
     * acquireLease, renewLease, releaseLease) is followed by
     * `WAIT replicas timeoutMs` on the connection that ran its script, and
     * resolves only when at least `replicas` replicas confirmed it. Fewer
     * confirmations within `timeoutMs` fail with `INDETERMINATE` (the write
     * happened on the primary and may or may not survive a failover), never
     * success. Default: off. See the README for what this guarantees across a failover.
     */
    replication: z
      .strictObject({
        replicas: z.number().int().min(1).max(64),
        timeoutMs: z.number().int().min(1).max(600_000),
      })
      .optional(),
    /**
     * Longest lease `ttlMs` this backend grants when `replication` is off; a
     * longer one is `INVALID_ARGUMENT`. Unset (the default), every TTL core
     * accepts (up to 24 h) is granted and the promotion hold lasts the longest
     * TTL the namespace granted as known to the promoted node; set, the hold
     * lasts at least this long, which also covers a grant the promoted node
     * never received (the strict guarantee). Ignored with `replication`.
     */
    maxLeaseTtlMs: z
      .number()
      .int()
      .min(1)
      .max(24 * 60 * 60 * 1000)
      .optional(),
    /**
     * Promotion hold, in ms: when `replication` is off, a node that was
     * promoted from replica grants no lease on a key it knows no live lease
     * of (`LEASE_HELD`, `context.promotionHold: true`) for at least this long
     * after the first `acquireLease` it serves for this namespace (the hold is
     * the longest of this, `maxLeaseTtlMs` and the longest TTL the namespace
     * granted as recorded on that node). At least `maxLeaseTtlMs` when both
     * are set; add the time the old primary may keep accepting writes after
     * the promotion (bounded on the server by `min-replicas-to-write` /
     * `min-replicas-max-lag`). Ignored with `replication`.
     */
    promotionHoldMs: z
      .number()
      .int()
      .min(1)
      .max(2 * 24 * 60 * 60 * 1000)
      .optional(),
    /**
     * Declares `capabilities.durable`: whether acknowledged writes survive a
     * server restart (AOF on: `appendonly yes`). Set it where `CONFIG GET` is
     * disabled (managed services). Unset, `openRedisBackend` probes
     * `CONFIG GET appendonly` on every primary and `createRedisBackend`
     * (which does not connect) reports `false`: never a guess.
     */
    durable: z.boolean().optional(),
  })
  .refine((options) => options.sentinel === undefined || options.cluster === undefined, {
    message: 'sentinel and cluster cannot be combined',
    path: ['sentinel'],
  })
  .refine(
    (options) =>
      options.promotionHoldMs === undefined ||
      options.maxLeaseTtlMs === undefined ||
      options.promotionHoldMs >= options.maxLeaseTtlMs,
    { message: 'promotionHoldMs must be at least maxLeaseTtlMs', path: ['promotionHoldMs'] },
  )

/** Options of `createRedisBackend` (every field optional; see {@link redisOptionsSchema}). */
export type RedisBackendOptions = z.input<typeof redisOptionsSchema>

/** The options after validation, defaults applied. */
export type ResolvedRedisOptions = z.output<typeof redisOptionsSchema>
