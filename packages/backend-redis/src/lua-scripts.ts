/**
 * The Lua scripts. Each conditional operation is one script, so its checks
 * and its writes are one atomic step on the server. Time comes from
 * `redis.call('TIME')` (allowed in scripts since Redis 5 with effect
 * replication, the only mode of Redis 7), so lease expiry is judged on the
 * server's clock. Replies are flat arrays of strings: a status word first
 * (`OK` or a contract error code), then fields. Never `false` inside an
 * array: it would end the reply early, so missing fields are sent as `''`.
 *
 * Hash fields: `RECORD_FIELD` in `key-layout.ts`, interpolated below so the
 * client and the scripts cannot disagree. Reply layouts: `script-replies.ts`.
 */

import { RECORD_FIELD as F, META_FIELD as M } from './key-layout.js'

/** A Lua script with how many of its arguments are keys. */
export interface LuaScript {
  readonly name: string
  readonly numberOfKeys: number
  readonly source: string
}

/*
 * The helpers, in fragments: a script defines only the ones it calls,
 * because every `local function` of a script is a closure created (and later
 * collected) on every run. `PRELUDE` is all of them, for the native queue's
 * scripts.
 */

/** now_ms(): the server clock (`TIME`) in milliseconds. */
const CLOCK = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

/**
 * num(x): an integer as a decimal string. '%d' (a C long) is exact for every
 * integer the scripts format (below 2^53); '%.0f' gave the same digits through
 * glibc's floating-point printer at about four times the server instructions
 * per call (callgrind), and tostring switches to exponents above 14 digits.
 */
const NUM = `
local function num(x) return string.format('%d', x) end
`

/** same_lease: whether a presented lease is the stored one. */
const SAME_LEASE = `
-- Whether a presented lease (token, id) is the stored one. A lease granted
-- since 0.3 stores its id as '<token>:<random>' in 'li'; the id must then
-- match exactly, so a token number re-issued after a failover never passes
-- for another holder's lease. A lease without an id of its token (granted by
-- 0.1/0.2, whose 'li' is absent or left over from an older token) is judged
-- by its token alone.
local function same_lease(lt, li, token, id)
  if (not lt) or lt ~= token then return false end
  if li and string.sub(li, 1, #lt + 1) == lt .. ':' then return li == id end
  return true
end
`

/**
 * The lease and precondition checks of put and delete, and their refusals,
 * without SAME_LEASE (which they call): FENCED_PUT defines SAME_LEASE before
 * them for its fence, so it takes these alone.
 */
const WRITE_CHECKS = `
-- Nil when the lease allows the write; an error reply otherwise. The holder
-- is read only for the LEASE_HELD reply, so a successful write skips it.
local function lease_check(key, given, id, now, lt, le, li)
  if given == '' then
    if lt and tonumber(le) > now then
      return {'LEASE_HELD', redis.call('HGET', key, '${F.leaseHolder}') or '', le}
    end
  elseif (not same_lease(lt, li, given, id)) or tonumber(le) <= now then
    return {'LEASE_LOST', lt or ''}
  end
  return nil
end
-- The current meta for a PRECONDITION_FAILED reply; read only on failure.
local function mismatch(key, v)
  if not v then return {'PRECONDITION_FAILED', '', '', '', ''} end
  local f = redis.call('HMGET', key, '${F.writer}', '${F.updatedAt}')
  return {'PRECONDITION_FAILED', v, tostring(redis.call('HSTRLEN', key, '${F.value}')), f[1] or '', f[2] or ''}
end
-- put's checks on the fields f of PUT_FIELDS: the lease (given token and id,
-- or none), then the precondition (ifMatch version or '', '1' for
-- ifNoneMatch). An error reply, or nil.
local function put_refused(key, f, token, id, if_match, if_none, now)
  local bad = lease_check(key, token, id, now, f[3], f[4], f[5])
  if bad then return bad end
  if (if_match ~= '' and f[1] ~= if_match) or (if_none == '1' and f[1]) then return mismatch(key, f[1]) end
  return nil
end
`

/**
 * The lease and precondition checks of put and delete, and their refusals
 * (with SAME_LEASE). Only a write that involves a lease or a precondition
 * runs them, so PUT and DELETE define them inside that branch.
 */
const CHECKS = `${SAME_LEASE}${WRITE_CHECKS}`

/** The fields put reads before it writes (`put_refused` and `write_value` take them in this order). */
const PUT_FIELDS = `'${F.version}', '${F.revision}', '${F.leaseToken}', '${F.leaseExpiresAt}', '${F.leaseId}'`

/** The namespace's longest granted TTL, read and raised by grants and renewals. */
const TTL = `
-- The namespace's longest granted TTL ('mt' of the meta hash): 0 when absent,
-- false when corrupt. Raised only when a grant is longer, so one HGET is the
-- usual cost.
local function longest_ttl(raw)
  if not raw then return 0 end
  return tonumber(raw) or false
end
local function record_ttl(meta, known, ttl)
  if ttl > known then redis.call('HSET', meta, '${M.longestTtl}', num(ttl)) end
end
`

/** write_value: stores a value as put does (needs NUM). */
const WRITE_VALUE = `
-- Stores a value as put does, its checks done: the next revision, a version
-- carrying the size, writer and server time; a new value is indexed and a new
-- key registered. v and r: the key's current version and revision (or nil).
-- Returns the version and updatedAt as written.
local function write_value(key, index, records, member, value, writer, suffix, now, v, r)
  local rev = num((tonumber(r) or 0) + 1)
  local version = rev .. '.' .. suffix .. '.' .. num(#value)
  local at = num(now)
  redis.call('HSET', key, '${F.version}', version, '${F.value}', value, '${F.writer}', writer, '${F.updatedAt}', at, '${F.revision}', rev)
  -- An existing value is already indexed, and a key with a revision is already registered.
  if not v then redis.call('ZADD', index, 0, member) end
  if not r then redis.call('SADD', records, member) end
  return version, at
end
`

/** remove_value: removes a value as delete does. */
const REMOVE_VALUE = `
-- Removes a value as delete does, its checks done (revision, lease and fence stay).
local function remove_value(key, index, member)
  redis.call('HDEL', key, '${F.version}', '${F.value}', '${F.writer}', '${F.updatedAt}')
  redis.call('ZREM', index, member)
end
`

/** drop_lease: removes a lease as releaseLease does. */
const DROP_LEASE = `
-- Removes a lease as releaseLease does (the fencing counter stays).
local function drop_lease(key)
  redis.call('HDEL', key, '${F.leaseHolder}', '${F.leaseToken}', '${F.leaseTtl}', '${F.leaseExpiresAt}', '${F.leaseId}')
end
`

/** hint: the change hint of watch. */
const HINT = `
-- The change hint of watch, after the write (the script is atomic: a subscriber's re-read sees it).
local function hint(channel, member)
  if channel and channel ~= '' then redis.call('SPUBLISH', channel, member) end
end
`

/** Every helper, for the native queue's scripts (`queue-scripts.ts`). */
export const PRELUDE = `${CLOCK}${NUM}${CHECKS}${TTL}
-- put's checks, reading the fields they need: an error reply, or nil and the
-- key's version, revision and lease fields.
local function put_check(key, token, id, if_match, if_none, now)
  local f = redis.call('HMGET', key, ${PUT_FIELDS})
  local bad = put_refused(key, f, token, id, if_match, if_none, now)
  if bad then return bad end
  return nil, f
end
${WRITE_VALUE}${REMOVE_VALUE}${DROP_LEASE}${HINT}`

/**
 * The text of put, and of FENCED_PUT with `fence` (the fence check, after
 * the clock is read) and `checks` (the write checks without the SAME_LEASE
 * the fence already defined): one body, so the two can never write
 * differently. With no fence the text is put's as it was before fences
 * existed (same SHA, same commands).
 */
function putSource(fence: string, checks: string): string {
  return `${CLOCK}${NUM}${WRITE_VALUE}${HINT}
local f = redis.call('HMGET', KEYS[1], ${PUT_FIELDS})
local now = now_ms()${fence}
-- Without a stored lease, a given token or a precondition there is nothing to check.
if f[3] or ARGV[6] ~= '' or ARGV[4] ~= '' or ARGV[5] == '1' then
${checks}
  local bad = put_refused(KEYS[1], f, ARGV[6], ARGV[8], ARGV[4], ARGV[5], now)
  if bad then return bad end
end
local version, at = write_value(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[7], now, f[1], f[2])
hint(ARGV[9], ARGV[1])
return {'OK', version, at}
`
}

/**
 * put. KEYS: record, index, records. ARGV: member, value, writer JSON or '',
 * ifMatch or '', '1' for ifNoneMatch, lease token or '', random suffix,
 * lease id or '', change channel or '' (the key is published there after the
 * write: the change hint of `watch`).
 * Reply: OK version updatedAt.
 *
 * The version is `<revision>.<random>.<size>`: carrying the value's size in
 * the version lets a listing read one `HMGET` per key instead of adding an
 * `HSTRLEN`, and it cannot go stale, because every write of the value
 * replaces the version in the same `HSET`. Versions from 0.1 have no size
 * part (`<revision>.<random>`); readers then measure the value (see SCAN).
 */
export const PUT: LuaScript = {
  name: 'put',
  numberOfKeys: 3,
  source: putSource('', CHECKS),
}

/**
 * put with `PutOptions.fence`: a write fenced by another key's lease. KEYS:
 * put's, then the fence key's record. ARGV: put's (the lease token and id
 * always '': a fence is never given with `lease`), then the fence's token and
 * lease id or ''. Reply: put's, or FENCE_LOST currentToken (the fence key's
 * token, '' when it has none).
 *
 * A script of its own rather than optional KEYS of PUT, so an unfenced put
 * runs exactly the script it ran before (same text, same commands). The fence
 * key's record is in the written key's slot (every key of a namespace shares
 * one hash tag, `key-layout.ts`), so one script reads the fence and writes
 * the value in one atomic step, on a Cluster too: an `acquireLease` of the
 * fence key is ordered before or after the whole write, never inside it. The
 * fence is judged as `lease_check` judges a given lease (token and lease id
 * by SAME_LEASE, live while its expiry is above the server clock), and first:
 * a stale fence is FENCE_LOST even when the key's own lease or precondition
 * would refuse the write too.
 */
export const FENCED_PUT: LuaScript = {
  name: 'fencedPut',
  numberOfKeys: 4,
  source: putSource(
    `${SAME_LEASE}
-- The fence: ARGV[10] and ARGV[11] must be the fence key's current, unexpired lease.
local g = redis.call('HMGET', KEYS[4], '${F.leaseToken}', '${F.leaseExpiresAt}', '${F.leaseId}')
if (not same_lease(g[1], g[3], ARGV[10], ARGV[11])) or tonumber(g[2]) <= now then
  return {'FENCE_LOST', g[1] or ''}
end`,
    WRITE_CHECKS,
  ),
}

/**
 * delete. KEYS: record, index. ARGV: member, ifMatch or '', lease token or '',
 * lease id or '', change channel or '' (published to when a value went).
 * Reply: OK '1' when a value existed, OK '0' otherwise.
 *
 * The revision `r` stays as the last put left it (equal to the deleted
 * version's revision), so the next put still gets a higher one: no counter
 * bump is needed. The server clock is read only when a lease is involved.
 */
export const DELETE: LuaScript = {
  name: 'delete',
  numberOfKeys: 2,
  source: `${REMOVE_VALUE}${HINT}
local f = redis.call('HMGET', KEYS[1], '${F.version}', '${F.leaseToken}', '${F.leaseExpiresAt}', '${F.leaseId}')
local v = f[1]
-- Without a stored lease, a given token or a precondition there is nothing to check.
if f[2] or ARGV[3] ~= '' or ARGV[2] ~= '' then
${CLOCK}${CHECKS}
  if f[2] or ARGV[3] ~= '' then
    local bad = lease_check(KEYS[1], ARGV[3], ARGV[4], f[2] and now_ms() or 0, f[2], f[3], f[4])
    if bad then return bad end
  end
  if ARGV[2] ~= '' and v ~= ARGV[2] then return mismatch(KEYS[1], v) end
end
if not v then return {'OK', '0'} end
remove_value(KEYS[1], KEYS[2], ARGV[1])
hint(ARGV[5], ARGV[1])
return {'OK', '1'}
`,
}

/**
 * The grant of acquireLease as a Lua function (see {@link ACQUIRE}), shared with the
 * native queue's claim so both grant tokens from the same fencing counter the same way.
 * Returns the reply of ACQUIRE.
 */
export const GRANT_LEASE = `
-- KEYS and ARGV are ACQUIRE's, passed in as tables (its text is the script's own).
local function grant_lease(KEYS, ARGV)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local f = redis.call('HMGET', KEYS[1], '${F.leaseHolder}', '${F.leaseToken}', '${F.leaseExpiresAt}', '${F.fence}')
local till = 0
local known = nil
if ARGV[5] == '1' then
  local info = redis.call('INFO', 'replication')
  local id2 = string.match(info, 'master_replid2:(%x+)')
  if id2 and string.find(id2, '[^0]') then
    local id = string.match(info, 'master_replid:(%x+)') or ''
    local m = redis.call('HMGET', KEYS[3], '${M.holdReplid}', '${M.holdFrom}', '${M.holdUntil}', '${M.longestTtl}')
    known = longest_ttl(m[4])
    if not known then return {'CORRUPT_META'} end
    local hold = math.max(tonumber(ARGV[6]), known)
    local from = now
    if m[1] == id then
      from, till = tonumber(m[2]), tonumber(m[3])
      if not (from and till) then return {'CORRUPT_META'} end
      if till <= now then hold = 0 end
    end
    if m[1] ~= id or from + hold > till then
      till = math.max(till, from + hold)
      redis.call('HSET', KEYS[3], '${M.holdReplid}', id, '${M.holdFrom}', num(from), '${M.holdUntil}', num(till))
    end
  end
end
if f[2] and tonumber(f[3]) > now then return {'LEASE_HELD', f[1], f[3]} end
if till > now then return {'PROMOTION_HOLD', num(till)} end
if known == nil then
  known = longest_ttl(redis.call('HGET', KEYS[3], '${M.longestTtl}'))
  if not known then return {'CORRUPT_META'} end
end
local token = math.max((tonumber(f[4]) or 0) + 1, now_us)
local expires = now + tonumber(ARGV[3])
local id = num(token) .. ':' .. ARGV[4]
redis.call('HSET', KEYS[1], '${F.leaseHolder}', ARGV[2], '${F.leaseToken}', num(token), '${F.leaseTtl}', ARGV[3], '${F.leaseExpiresAt}', num(expires), '${F.fence}', num(token), '${F.leaseId}', id)
-- A fencing counter means an earlier acquire already registered the key.
if not f[4] then redis.call('SADD', KEYS[2], ARGV[1]) end
record_ttl(KEYS[3], known, tonumber(ARGV[3]))
return {'OK', num(token), num(expires), id}
end
`

/**
 * acquireLease. KEYS: record, records, namespace meta. ARGV: member, holder,
 * ttlMs, random id, promotion hold '1' on ('0' off, under `replication`),
 * configured least hold in ms (`maxLeaseTtlMs`/`promotionHoldMs`, '0' unset).
 * Reply: OK token expiresAt leaseId, LEASE_HELD holder expiresAt,
 * PROMOTION_HOLD holdUntil, or CORRUPT_META.
 *
 * The token is max(counter + 1, server time in microseconds). The time floor
 * is what keeps tokens increasing across a failover to a replica that missed
 * the last grants: the promoted node's clock is past the old primary's last
 * grant (assumption, README "Clocks": the promoted node's clock lags the old
 * primary's by less than the promotion hold plus the time from that lost
 * grant to its first acquire). Microseconds since the epoch stay
 * below 2^53 (a JS safe integer) until the year 2255, and one key cannot be
 * granted twice in a microsecond, so the counter never runs ahead of the clock
 * in practice. Counters written by 0.1/0.2 (small numbers) are below the floor.
 *
 * The promotion hold: a lease the old primary acknowledged but never
 * replicated is unknown here, so a node that was promoted from replica
 * (`INFO replication` shows a secondary replication id, `master_replid2`, not
 * all zeros) grants nothing on a key without a live lease until the hold
 * ends: from the first acquire this namespace sees on that node (its
 * `master_replid`; also one refused because the key's lease is live, so the
 * hold starts as early as it can) for the longer of the configured hold and
 * the longest TTL the namespace granted as recorded here (`mt`, written by
 * every grant's own script, so it reached this node with every grant that
 * did). Recorded in the meta hash, so every client honours the same hold and
 * a later one on a settled node does not wait again; while the hold runs, an
 * instance configured with a longer hold extends it (from the same start).
 * Once over it stays over: a longer grant made here afterwards is not one the
 * old primary acknowledged. Live leases the node has are reported as
 * LEASE_HELD as always, and renew, release and fenced writes never look at
 * the hold. A node never promoted reads INFO and `mt` only.
 */
export const ACQUIRE: LuaScript = {
  name: 'acquire',
  numberOfKeys: 3,
  source: `${NUM}${TTL}${GRANT_LEASE}
return grant_lease(KEYS, ARGV)
`,
}

/**
 * The renewal of renewLease as a Lua function (see {@link RENEW}), shared
 * with the native queue's claim that keeps a delivery's lease.
 */
export const RENEW_LEASE = `
-- KEYS and ARGV are RENEW's, passed in as tables (its text is the script's own); now in ms.
local function renew_lease(KEYS, ARGV, now)
local f = redis.call('HMGET', KEYS[1], '${F.leaseHolder}', '${F.leaseToken}', '${F.leaseTtl}', '${F.leaseExpiresAt}', '${F.leaseId}')
if (not same_lease(f[2], f[5], ARGV[1], ARGV[2])) or tonumber(f[4]) <= now then return {'LEASE_LOST', f[2] or ''} end
local known = longest_ttl(redis.call('HGET', KEYS[2], '${M.longestTtl}'))
if not known then return {'CORRUPT_META'} end
local expires = now + tonumber(f[3])
redis.call('HSET', KEYS[1], '${F.leaseExpiresAt}', num(expires))
record_ttl(KEYS[2], known, tonumber(f[3]))
return {'OK', f[1], f[3], num(expires)}
end
`

/**
 * renewLease. KEYS: record, namespace meta. ARGV: token, lease id or ''.
 * Reply: OK holder ttlMs expiresAt, LEASE_LOST currentToken, or CORRUPT_META.
 * A renewal keeps the lease's TTL, so it raises the namespace's longest TTL
 * (`mt`) only for a lease granted before grants recorded it (0.1–0.3).
 */
export const RENEW: LuaScript = {
  name: 'renew',
  numberOfKeys: 2,
  source: `${CLOCK}${NUM}${SAME_LEASE}${TTL}${RENEW_LEASE}
return renew_lease(KEYS, ARGV, now_ms())
`,
}

/** releaseLease. KEYS: record. ARGV: token, lease id or ''. Reply: 1 when released, 0 otherwise. */
export const RELEASE: LuaScript = {
  name: 'release',
  numberOfKeys: 1,
  source: `${SAME_LEASE}${DROP_LEASE}
local f = redis.call('HMGET', KEYS[1], '${F.leaseToken}', '${F.leaseId}')
if same_lease(f[1], f[2], ARGV[1], ARGV[2]) then
  drop_lease(KEYS[1])
  return 1
end
return 0
`,
}

/** getLease. KEYS: record. Reply: OK holder token ttlMs expiresAt, or NONE. */
export const GET_LEASE: LuaScript = {
  name: 'getLease',
  numberOfKeys: 1,
  source: `${CLOCK}
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], '${F.leaseHolder}', '${F.leaseToken}', '${F.leaseTtl}', '${F.leaseExpiresAt}')
if f[2] and tonumber(f[4]) > now then return {'OK', f[1], f[2], f[3], f[4]} end
return {'NONE'}
`,
}

/**
 * head, for a version without a size part (written by 0.1): the size is
 * measured in the same atomic step. KEYS: record. Reply: OK version size
 * writer updatedAt, or NONE.
 */
export const HEAD: LuaScript = {
  name: 'head',
  numberOfKeys: 1,
  source: `
local f = redis.call('HMGET', KEYS[1], '${F.version}', '${F.writer}', '${F.updatedAt}')
if not f[1] then return {'NONE'} end
return {'OK', f[1], tostring(redis.call('HSTRLEN', KEYS[1], '${F.value}')), f[2] or '', f[3] or ''}
`,
}

/**
 * One listing batch. KEYS: index. ARGV: min, max (ZRANGE BYLEX bounds),
 * count, record prefix. Reply: flat (key, version, size, updatedAt) tuples.
 * One `HMGET` per member: the size is the version's last part; only a
 * version without one (written by 0.1) costs an `HSTRLEN`. The hashes it
 * reads share the index's hash tag, so they are in its slot.
 */
export const SCAN: LuaScript = {
  name: 'scan',
  numberOfKeys: 1,
  source: `
local members = redis.call('ZRANGE', KEYS[1], ARGV[1], ARGV[2], 'BYLEX', 'LIMIT', 0, tonumber(ARGV[3]))
local find, sub = string.find, string.sub
local out = {}
local n = 0
for i = 1, #members do
  local m = members[i]
  local f = redis.call('HMGET', ARGV[4] .. m, '${F.version}', '${F.updatedAt}')
  local v = f[1]
  local size = ''
  if v then
    local dot = find(v, '.', 1, true)
    local last = dot and find(v, '.', dot + 1, true)
    if last then size = sub(v, last + 1)
    else size = tostring(redis.call('HSTRLEN', ARGV[4] .. m, '${F.value}')) end
  end
  out[n + 1] = m
  out[n + 2] = v or ''
  out[n + 3] = size
  out[n + 4] = f[2] or ''
  n = n + 4
end
return out
`,
}

/**
 * One batch of destroy. KEYS: records, index, meta. ARGV: record prefix, batch size,
 * change channel or '' (an empty message is published: "everything changed").
 * Removes up to a batch of per-key hashes; once none are left, the index and
 * the meta hash (a promotion hold then starts afresh at the next grant: longer, never shorter).
 * Reply: how many hashes were removed (0 when done).
 */
export const DESTROY: LuaScript = {
  name: 'destroy',
  numberOfKeys: 3,
  source: `
local members = redis.call('SPOP', KEYS[1], tonumber(ARGV[2]))
for _, m in ipairs(members) do redis.call('DEL', ARGV[1] .. m) end
if #members == 0 then redis.call('DEL', KEYS[2], KEYS[3]) end
if #members > 0 and ARGV[3] and ARGV[3] ~= '' then redis.call('SPUBLISH', ARGV[3], '') end
return #members
`,
}
