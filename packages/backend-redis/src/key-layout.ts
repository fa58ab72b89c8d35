import type { CursorPosition } from '@agent-state/core'

/**
 * The fields of a key's hash: the one place their short names are given (the
 * Lua scripts and the client both use these). Short, because every key
 * carries them; stable, because 0.1 data uses the same names.
 */
export const RECORD_FIELD = {
  /** The value's bytes. */
  value: 'd',
  /** The version, `<revision>.<random>.<size>` (0.1: `<revision>.<random>`). */
  version: 'v',
  /** The revision counter; kept across delete so versions never repeat. */
  revision: 'r',
  /** The writer identity JSON, or `''`. */
  writer: 'w',
  /** `updatedAt`, server milliseconds. */
  updatedAt: 't',
  /** The lease holder. */
  leaseHolder: 'lh',
  /** The lease's fencing token. */
  leaseToken: 'lt',
  /** The lease's TTL in milliseconds (what renew extends by). */
  leaseTtl: 'lttl',
  /** The lease's expiry, server milliseconds. */
  leaseExpiresAt: 'le',
  /** The lease id, `<token>:<random>` (absent on 0.1/0.2 grants). */
  leaseId: 'li',
  /** The fencing counter: the last token granted; never removed. */
  fence: 'n',
} as const

/**
 * The fields of a namespace's meta hash. The promotion hold is recorded per
 * node identity (`master_replid`), so every client and every later backend
 * instance on that node honour the same hold, and a replid that changes again
 * (another promotion) starts a new one. `mt` is written on every node.
 */
export const META_FIELD = {
  /** The `master_replid` of the promoted node the hold belongs to. */
  holdReplid: 'hr',
  /** Server ms of the first grant attempt on that node: the hold's start. */
  holdFrom: 'hf',
  /** Server ms until which no lease is granted on a key without a live one. */
  holdUntil: 'hu',
  /**
   * The longest lease TTL (ms) the namespace ever granted or renewed, written
   * by the grant's own script (so it replicates with the grant): the promotion
   * hold lasts at least this long.
   */
  longestTtl: 'mt',
} as const

/**
 * Layout of a namespace in Redis. Every key starts with
 * `<keyPrefix>:{ns:<namespace>}:`, so all of a namespace's keys share one
 * hash tag and live in one Cluster slot: every Lua script touches one slot.
 *
 * - `<base>v:<user key>`: a hash per user key, its fields named by
 *   {@link RECORD_FIELD}. It outlives a delete (only the value fields go), so
 *   revision and fence keep growing.
 * - `<base>index`: sorted set of the keys that hold a value, all at score 0,
 *   read with `ZRANGE … BYLEX` (memcmp order = UTF-8 byte order).
 * - `<base>records`: set of every user key that has a hash, so `destroy`
 *   finds them all without `KEYS` or `SCAN`.
 * - `<base>changes`: not a key but the sharded pub/sub channel of change
 *   hints (see {@link RedisKeyLayout.changes}).
 * - `<base>meta`: hash of namespace state kept on the server, fields named by
 *   {@link META_FIELD} (the promotion hold). In the namespace's slot like the
 *   rest, so in Cluster mode it lives on the node that serves the namespace.
 *
 * The user key is appended verbatim after `v:`: Redis keys are binary-safe,
 * and the hash tag is the first `{…}` of the key, which is always ours
 * (namespaces cannot contain braces), so braces in a user key cannot change
 * the slot. `v:` and the fixed names `index`/`records`/`meta` never collide.
 */
export interface RedisKeyLayout {
  /** Prefix of every per-key hash; append the user key. */
  readonly recordPrefix: string
  readonly index: string
  readonly records: string
  /** The namespace's meta hash (promotion hold). */
  readonly meta: string
  /**
   * The sharded pub/sub channel the write scripts publish each changed key
   * to (`SPUBLISH`; an empty message: the whole namespace). It carries the
   * namespace's hash tag, so on a Cluster it belongs to the namespace's
   * slot and shard, like every key the scripts touch.
   */
  readonly changes: string
  /** The hash of one user key. */
  record(key: string): string
}

/** The layout for a namespace. */
export function redisKeyLayout(keyPrefix: string, namespace: string): RedisKeyLayout {
  const base = `${keyPrefix}:{ns:${namespace}}:`
  const recordPrefix = `${base}v:`
  return {
    recordPrefix,
    index: `${base}index`,
    records: `${base}records`,
    meta: `${base}meta`,
    changes: `${base}changes`,
    record: (key) => recordPrefix + key,
  }
}

/** No UTF-8 string contains this byte, so `prefix + 0xFF` is above every key with that prefix. */
const ABOVE = Buffer.from([0xff])

/** Lower and upper `ZRANGE BYLEX` bounds of the index for one scan batch. */
export function indexBounds(
  prefix: string,
  position: CursorPosition | undefined,
): [Buffer, Buffer] {
  const prefixBytes = Buffer.from(prefix, 'utf8')
  const upper =
    prefix === '' ? Buffer.from('+') : Buffer.concat([Buffer.from('('), prefixBytes, ABOVE])
  const fromPrefix =
    prefix === '' ? Buffer.from('-') : Buffer.concat([Buffer.from('['), prefixBytes])
  if (position === undefined) return [fromPrefix, upper]
  // A whole group is skipped by starting above every key that begins with it.
  const after = Buffer.concat([
    Buffer.from(position.after, 'utf8'),
    position.group ? ABOVE : Buffer.alloc(0),
  ])
  if (Buffer.compare(after, prefixBytes) < 0) return [fromPrefix, upper]
  return [Buffer.concat([Buffer.from('('), after]), upper]
}
