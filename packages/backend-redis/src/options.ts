import { namespaceSchema } from '@agent-state/core'
import { z } from 'zod'

const nodeSchema = z.object({
  host: z.string().min(1),
  port: z.number().int().min(1).max(65_535),
})

/**
 * Options of `createRedisBackend`, as a zod schema. Every field is optional;
 * see {@link RedisBackendOptions} for what each one means.
 */
export const redisOptionsSchema = z
  .object({
    /** Server host (single server). Default `127.0.0.1`. */
    host: z.string().min(1).optional(),
    /** Server port (single server). Default 6379. */
    port: z.number().int().min(1).max(65_535).optional(),
    /** ACL user name, for `AUTH username password`. */
    username: z.string().optional(),
    /** Password; never shown in errors or logs. */
    password: z.string().optional(),
    /** Logical database number (single server only; Cluster has only db 0). Default 0. */
    db: z.number().int().min(0).max(1_000_000).optional(),
    /** Connect with TLS (`rediss://`). Default false. */
    tls: z.boolean().optional(),
    /** Redis Cluster: seed nodes. When set, `host`, `port` and `db` are not used. */
    cluster: z.object({ nodes: z.array(nodeSchema).min(1) }).optional(),
    /**
     * Redis Sentinel: the Sentinels and the master group name. The client asks
     * them for the current primary (and again after a failover). When set,
     * `host` and `port` are not used.
     */
    sentinel: z
      .object({
        nodes: z.array(nodeSchema).min(1),
        name: z.string().min(1).max(256),
        password: z.string().optional(),
      })
      .strict()
      .optional(),
    /** Isolates this instance's keys; see the package README. Default `"default"`. */
    namespace: namespaceSchema.optional(),
    /** First part of every Redis key this backend writes. Default `"as"`. */
    keyPrefix: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/)
      .optional(),
    /** How long an operation waits for a (re)connection before `UNAVAILABLE`. Default 5000 ms. */
    connectTimeoutMs: z.number().int().min(1).max(600_000).optional(),
    /** How long a sent command may take before `INDETERMINATE`. Default 5000 ms. */
    commandTimeoutMs: z.number().int().min(1).max(600_000).optional(),
    /** Largest value accepted, in bytes. Default 64 MiB (Redis allows up to 512 MB). */
    maxValueBytes: z
      .number()
      .int()
      .min(1)
      .max(500 * 1024 * 1024)
      .optional(),
    /**
     * Durable acknowledgement: every mutating script (put, delete,
     * acquireLease, renewLease, releaseLease) is followed, on the same
     * connection, by `WAIT replicas timeoutMs`, and succeeds only when at
     * least `replicas` replicas confirmed it; fewer is `INDETERMINATE`.
     * Default: off (a write is acknowledged once the primary applied it).
     */
    /**
     * Declares whether acknowledged writes survive a server restart, for
     * servers where `CONFIG GET` is disabled (managed services). Unset:
     * `openRedisBackend` probes the server; `createRedisBackend` reports false.
     */
    durable: z.boolean().optional(),
    replication: z
      .object({
        replicas: z.number().int().min(1).max(64),
        timeoutMs: z.number().int().min(1).max(600_000),
      })
      .strict()
      .optional(),
  })
  .strict()
  .refine((options) => options.sentinel === undefined || options.cluster === undefined, {
    message: 'sentinel and cluster cannot be combined',
    path: ['sentinel'],
  })

/** Options of `createRedisBackend`. */
export interface RedisBackendOptions {
  /** Server host (single server). Default `127.0.0.1`. */
  readonly host?: string
  /** Server port (single server). Default 6379. */
  readonly port?: number
  /** ACL user name, for `AUTH username password`. */
  readonly username?: string
  /** Password; never shown in errors, `context` or logs. */
  readonly password?: string
  /** Logical database number (single server only). Default 0. */
  readonly db?: number
  /** Connect with TLS, as a `rediss://` URL does. Default false. */
  readonly tls?: boolean
  /** Redis Cluster: seed nodes. When set, `host`, `port` and `db` are ignored. */
  readonly cluster?: { readonly nodes: readonly { readonly host: string; readonly port: number }[] }
  /**
   * Redis Sentinel: `nodes` are the Sentinels, `name` the master group,
   * `password` the Sentinels' own password if they require one (never shown).
   * The client asks them for the current primary at connect and after a
   * failover (`+switch-master`). When set, `host` and `port` are ignored;
   * not combinable with `cluster`.
   */
  readonly sentinel?: {
    readonly nodes: readonly { readonly host: string; readonly port: number }[]
    readonly name: string
    readonly password?: string
  }
  /**
   * Isolates this instance's keys from other namespaces in the same database.
   * 1 to 128 of `[A-Za-z0-9._-]`, not starting with a dot. Default `"default"`.
   */
  readonly namespace?: string
  /** First part of every Redis key this backend writes. Default `"as"`. */
  readonly keyPrefix?: string
  /**
   * How long an operation waits for the connection to become ready (first
   * connect or reconnect) before failing with `UNAVAILABLE`. Default 5000 ms.
   */
  readonly connectTimeoutMs?: number
  /**
   * How long a sent command may take before failing with `INDETERMINATE`
   * (it may still be applied). Default 5000 ms.
   */
  readonly commandTimeoutMs?: number
  /** Largest value accepted, in bytes. Default 64 MiB. */
  readonly maxValueBytes?: number
  /**
   * Durable acknowledgement. When set, every mutating operation (put, delete,
   * acquireLease, renewLease, releaseLease) is followed by
   * `WAIT replicas timeoutMs` on the connection that ran its script, and
   * resolves only when at least `replicas` replicas confirmed it. Fewer
   * confirmations within `timeoutMs` fail with `INDETERMINATE` (the write
   * happened on the primary and may or may not survive a failover), never
   * success. See the README for what this guarantees across a failover.
   */
  readonly replication?: { readonly replicas: number; readonly timeoutMs: number }
  /**
   * Declares `capabilities.durable`: whether acknowledged writes survive a
   * server restart (AOF on: `appendonly yes`). Set it where `CONFIG GET` is
   * disabled (managed services). Unset, `openRedisBackend` probes
   * `CONFIG GET appendonly` on every primary and `createRedisBackend`
   * (which does not connect) reports `false`: never a guess.
   */
  readonly durable?: boolean
}

/** The options after validation and defaults. */
export interface ResolvedRedisOptions {
  readonly host: string
  readonly port: number
  readonly username: string | undefined
  readonly password: string | undefined
  readonly db: number
  readonly tls: boolean
  readonly clusterNodes: readonly { readonly host: string; readonly port: number }[] | undefined
  readonly namespace: string
  readonly keyPrefix: string
  readonly connectTimeoutMs: number
  readonly commandTimeoutMs: number
  readonly maxValueBytes: number
  readonly replication: { readonly replicas: number; readonly timeoutMs: number } | undefined
  readonly durable: boolean | undefined
  readonly sentinel: RedisBackendOptions['sentinel']
}

/** Default largest value: 64 MiB. */
export const DEFAULT_MAX_VALUE_BYTES = 64 * 1024 * 1024

/** Applies defaults to options that passed {@link redisOptionsSchema}. */
export function resolveOptions(options: RedisBackendOptions): ResolvedRedisOptions {
  return {
    host: options.host ?? '127.0.0.1',
    port: options.port ?? 6379,
    username: options.username,
    password: options.password,
    db: options.db ?? 0,
    tls: options.tls ?? false,
    clusterNodes: options.cluster?.nodes,
    namespace: options.namespace ?? 'default',
    keyPrefix: options.keyPrefix ?? 'as',
    connectTimeoutMs: options.connectTimeoutMs ?? 5000,
    commandTimeoutMs: options.commandTimeoutMs ?? 5000,
    maxValueBytes: options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES,
    replication: options.replication,
    durable: options.durable,
    sentinel: options.sentinel,
  }
}
