/**
 * Layout of a namespace in Redis. Every key starts with
 * `<keyPrefix>:{ns:<namespace>}:`, so all of a namespace's keys share one
 * hash tag and live in one Cluster slot: every Lua script touches one slot.
 *
 * - `<base>v:<user key>`: a hash per user key: value (`d`), version (`v`),
 *   revision (`r`), writer JSON (`w`), updatedAt (`t`), lease (`lh` holder,
 *   `lt` token, `lttl` ttl, `le` expiry) and fencing counter (`n`). It
 *   outlives a delete (only `v d w t` go), so revision and fence keep growing.
 * - `<base>index`: sorted set of the keys that hold a value, all at score 0,
 *   read with `ZRANGE … BYLEX` (memcmp order = UTF-8 byte order).
 * - `<base>records`: set of every user key that has a hash, so `destroy`
 *   finds them all without `KEYS` or `SCAN`.
 *
 * The user key is appended verbatim after `v:`: Redis keys are binary-safe,
 * and the hash tag is the first `{…}` of the key, which is always ours
 * (namespaces cannot contain braces), so braces in a user key cannot change
 * the slot. `v:` and the fixed names `index`/`records` never collide.
 */
export interface RedisKeyLayout {
  /** Prefix of every per-key hash; append the user key. */
  readonly recordPrefix: string
  readonly index: string
  readonly records: string
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
    record: (key) => recordPrefix + key,
  }
}
