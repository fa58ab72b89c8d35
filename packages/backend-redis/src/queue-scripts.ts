/**
 * The native daemon queue's Lua scripts (the `nativeQueue` capability): one
 * script per trigger, per claim and per settlement. They write the runtime's
 * queue records (docs/runtime/daemons.md, "Records") as ordinary values of
 * this backend, through the same Lua functions as `put`, `delete`,
 * `acquireLease`, `renewLease` and `releaseLease` (`lua-scripts.ts`), so
 * versions, revisions, the listing index, the registered keys, the fencing
 * counter and the change hints are exactly what those keep.
 *
 * Event keys are computed in the script (their sequence number is assigned
 * there) from the namespace's record prefix, like SCAN's: every key of a
 * namespace carries its hash tag, so a queue stays on one Cluster slot.
 * Replies are flat arrays of strings, as in `lua-scripts.ts`.
 */

import { RECORD_FIELD as F } from './key-layout.js'
import { GRANT_LEASE, type LuaScript, PRELUDE, RENEW_LEASE } from './lua-scripts.js'

/** Helpers of the queue scripts: event members and the record JSON they build. */
const QUEUE_PRELUDE = `
local function event_member(prefix, digits, seq)
  local s = num(seq)
  return prefix .. string.rep('0', digits - #s) .. s
end
-- A record's JSON decoded (written by the runtime or these scripts), nil when it is not an object.
local function decoded(raw)
  local ok, value = pcall(cjson.decode, raw or '')
  if ok and type(value) == 'table' then return value end
  return nil
end
-- The numbers of the head and tail records, nil when missing or damaged (checked before any
-- write, so a damaged queue is refused unchanged). JSON.stringify of the runtime's records, and
-- these scripts, write the format and the numbers first: a pattern reads them there at a fraction
-- of cjson.decode's cost (callgrind: 5k server instructions against 22k for a tail carrying its
-- event, 11k for a head); a record that does not start and end that way is decoded as before.
local function tail_next(raw)
  local n = raw and string.match(raw, '^{"format":"agent%-state/daemon%-tail","next":(%d+),"last":[{n]')
  if n and string.byte(raw, -1) == 125 then return tonumber(n) end
  local t = decoded(raw)
  return t and tonumber(t.next)
end
local function head_numbers(raw)
  local h, a, i
  if raw then
    h, a, i = string.match(raw, '^{"format":"agent%-state/daemon%-head","head":(%d+),"attempts":(%d+),"iterations":(%d+),"claim":[{n]')
  end
  if h and string.byte(raw, -1) == 125 then return tonumber(h), tonumber(a), tonumber(i) end
  local t = decoded(raw)
  if not t then return nil end
  return tonumber(t.head), tonumber(t.attempts), tonumber(t.iterations)
end
-- The event record at seq, nil when missing or not the event record of seq
-- (checked before any write, so a damaged queue is refused unchanged); its
-- start read as the head's and tail's are.
local function head_event(record_prefix, prefix, digits, seq)
  local raw = redis.call('HGET', record_prefix .. event_member(prefix, digits, seq), '${F.value}')
  if not raw then return nil end
  local start = '{"format":"agent-state/daemon-event","seq":' .. num(seq) .. ',"eventId":'
  if string.sub(raw, 1, #start) == start and string.byte(raw, -1) == 125 then return raw end
  local e = decoded(raw)
  if not (e and e.format == 'agent-state/daemon-event' and tonumber(e.seq) == seq) then return nil end
  return raw
end
-- A head record as JSON.stringify writes it (the runtime's HeadRecord, fields in its order).
local function head_json(head, attempts, iterations, claim)
  return '{"format":"agent-state/daemon-head","head":' .. num(head) .. ',"attempts":' .. num(attempts)
    .. ',"iterations":' .. num(iterations) .. ',"claim":' .. claim .. '}'
end
`

/**
 * queueAppend. KEYS: tail record, head record, index, records. ARGV: tail
 * member, capacity, mode ('all' or 'prefix'), record prefix, event member
 * prefix, digits, change channel, version suffix, then each event record's
 * JSON after its seq field.
 * Reply: OK first stored (stored is 0 when nothing fits), LEASE_HELD, or
 * QUEUE_CORRUPT key.
 *
 * Capacity: `next - head` events are held; the head and tail are read in
 * this same atomic step, so the bound is exact (the generic path's read of
 * an older head is only ever more conservative). Every event gets its own
 * record here, and the tail record carries the write's events as the
 * generic path's does (`last`, and `earlier` for a batch).
 */
export const QUEUE_APPEND: LuaScript = {
  name: 'queueAppend',
  numberOfKeys: 4,
  source: `${PRELUDE}${QUEUE_PRELUDE}
local now = now_ms()
local t = redis.call('HMGET', KEYS[1], '${F.version}', '${F.value}', '${F.revision}', '${F.leaseToken}', '${F.leaseExpiresAt}', '${F.leaseId}')
local bad = lease_check(KEYS[1], '', '', now, t[4], t[5], t[6])
if bad then return bad end
local nxt = tail_next(t[2])
local at = head_numbers(redis.call('HGET', KEYS[2], '${F.value}'))
if not (nxt and at) then return {'QUEUE_CORRUPT', ARGV[1]} end
local k = #ARGV - 8
local stored = math.min(tonumber(ARGV[2]) - (nxt - at), k)
if stored <= 0 or (ARGV[3] == 'all' and stored < k) then return {'OK', num(nxt), '0'} end
local records = {}
for i = 1, stored do
  local seq = nxt + i - 1
  local member = event_member(ARGV[5], tonumber(ARGV[6]), seq)
  local key = ARGV[4] .. member
  local json = '{"format":"agent-state/daemon-event","seq":' .. num(seq) .. ARGV[8 + i]
  local f = redis.call('HMGET', key, '${F.version}', '${F.revision}')
  write_value(key, KEYS[3], KEYS[4], member, json, '', ARGV[8], now, f[1], f[2])
  hint(ARGV[7], member)
  records[i] = json
end
local value = '{"format":"agent-state/daemon-tail","next":' .. num(nxt + stored) .. ',"last":' .. records[stored]
if stored > 1 then value = value .. ',"earlier":[' .. table.concat(records, ',', 1, stored - 1) .. ']' end
value = value .. '}'
write_value(KEYS[1], KEYS[3], KEYS[4], ARGV[1], value, '', ARGV[8], now, t[1], t[3])
hint(ARGV[7], ARGV[1])
return {'OK', num(nxt), num(stored)}
`,
}

/**
 * queueClaim. KEYS: head record, tail record, records, namespace meta,
 * index. ARGV: head member, holder, ttlMs, random lease id, promotion hold
 * '1'/'0', least hold ms (as ACQUIRE), claimedAt, record prefix, event
 * member prefix, digits, version suffix, change channel, then for an
 * ack-and-claim the previous delivery's token, lease id, head version and
 * sequence number (all '' otherwise).
 * Reply: OK headVersion token expiresAt leaseId holder ttlMs eventJson
 * headJson; OK ACKED (an ack-and-claim that acknowledged and found the queue
 * empty: it wrote, so it is an OK reply, which replication confirms);
 * EMPTY (nothing written); LEASE_HELD, LEASE_LOST, PRECONDITION_FAILED,
 * PROMOTION_HOLD, CORRUPT_META as the lease and put scripts; QUEUE_CORRUPT key.
 *
 * Every check comes before the first write, so a refused claim writes
 * nothing. A fresh claim takes the lease with ACQUIRE's grant (its token
 * from the head record's fencing counter); an ack-and-claim renews the kept
 * lease with RENEW's renewal, so a stale delivery is refused there.
 */
export const QUEUE_CLAIM: LuaScript = {
  name: 'queueClaim',
  numberOfKeys: 5,
  source: `${PRELUDE}${GRANT_LEASE}${RENEW_LEASE}${QUEUE_PRELUDE}
local now = now_ms()
local h = redis.call('HMGET', KEYS[1], '${F.version}', '${F.value}', '${F.revision}', '${F.leaseToken}', '${F.leaseExpiresAt}', '${F.leaseId}')
local at, attempts, iterations = head_numbers(h[2])
local nxt = tail_next(redis.call('HGET', KEYS[2], '${F.value}'))
if not (nxt and at and attempts and iterations) then return {'QUEUE_CORRUPT', ARGV[1]} end
local prefix, digits = ARGV[9], tonumber(ARGV[10])
local kept = ARGV[13] ~= ''
if kept then
  if (not same_lease(h[4], h[6], ARGV[13], ARGV[14])) or tonumber(h[5]) <= now then return {'LEASE_LOST', h[4] or ''} end
  if h[1] ~= ARGV[15] then return mismatch(KEYS[1], h[1]) end
  local done = event_member(prefix, digits, tonumber(ARGV[16]))
  at, attempts, iterations = tonumber(ARGV[16]) + 1, 0, iterations + 1
  -- The acknowledgement: the event goes, and with an empty queue the lease too (a plain ack).
  if at >= nxt then
    write_value(KEYS[1], KEYS[5], KEYS[3], ARGV[1], head_json(at, 0, iterations, 'null'), '', ARGV[11], now, h[1], h[3])
    remove_value(ARGV[8] .. done, KEYS[5], done)
    drop_lease(KEYS[1])
    hint(ARGV[12], done)
    hint(ARGV[12], ARGV[1])
    -- OK, not EMPTY: this wrote, so under replication the client waits for it (WAIT).
    return {'OK', 'ACKED'}
  end
  local ev = head_event(ARGV[8], prefix, digits, at)
  if not ev then return {'QUEUE_CORRUPT', event_member(prefix, digits, at)} end
  local r = renew_lease({KEYS[1], KEYS[4]}, {ARGV[13], ARGV[14]}, now)
  if r[1] ~= 'OK' then return r end
  remove_value(ARGV[8] .. done, KEYS[5], done)
  hint(ARGV[12], done)
  local lease = redis.call('HMGET', KEYS[1], '${F.leaseToken}', '${F.leaseId}', '${F.leaseHolder}', '${F.leaseTtl}')
  local claim = '{"seq":' .. num(at) .. ',"holder":' .. cjson.encode(lease[3]) .. ',"token":' .. lease[1] .. ',"claimedAt":"' .. ARGV[7] .. '"}'
  local json = head_json(at, 1, iterations, claim)
  local version = write_value(KEYS[1], KEYS[5], KEYS[3], ARGV[1], json, '', ARGV[11], now, h[1], h[3])
  hint(ARGV[12], ARGV[1])
  return {'OK', version, lease[1], r[4], lease[2], lease[3], lease[4], ev, json}
end
if at >= nxt then return {'EMPTY'} end
local ev = head_event(ARGV[8], prefix, digits, at)
if not ev then return {'QUEUE_CORRUPT', event_member(prefix, digits, at)} end
local g = grant_lease({KEYS[1], KEYS[3], KEYS[4]}, {ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]})
if g[1] ~= 'OK' then return g end
-- Leftover of an ack that crashed between its writes (generic path): gone before the claim.
if at > 0 then
  local left = event_member(prefix, digits, at - 1)
  if redis.call('HEXISTS', ARGV[8] .. left, '${F.version}') == 1 then
    remove_value(ARGV[8] .. left, KEYS[5], left)
    hint(ARGV[12], left)
  end
end
local claim = '{"seq":' .. num(at) .. ',"holder":' .. cjson.encode(ARGV[2]) .. ',"token":' .. g[2] .. ',"claimedAt":"' .. ARGV[7] .. '"}'
local json = head_json(at, attempts + 1, iterations, claim)
local version = write_value(KEYS[1], KEYS[5], KEYS[3], ARGV[1], json, '', ARGV[11], now, h[1], h[3])
hint(ARGV[12], ARGV[1])
return {'OK', version, g[2], g[3], g[4], ARGV[2], ARGV[3], ev, json}
`,
}

/**
 * queueSettle. KEYS: head record, index, records. ARGV: head member, head
 * JSON, lease token, lease id, head version (ifMatch), acknowledged event's
 * member or '', record prefix, version suffix, change channel.
 * Reply: OK; LEASE_LOST, PRECONDITION_FAILED as put's.
 *
 * The fenced head write of `put` (lease, then version), the event's removal
 * and the lease's release, in one step.
 */
export const QUEUE_SETTLE: LuaScript = {
  name: 'queueSettle',
  numberOfKeys: 3,
  source: `${PRELUDE}
local now = now_ms()
local bad, f = put_check(KEYS[1], ARGV[3], ARGV[4], ARGV[5], '', now)
if bad then return bad end
write_value(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], '', ARGV[8], now, f[1], f[2])
if ARGV[6] ~= '' then
  remove_value(ARGV[7] .. ARGV[6], KEYS[2], ARGV[6])
  hint(ARGV[9], ARGV[6])
end
drop_lease(KEYS[1])
hint(ARGV[9], ARGV[1])
return {'OK'}
`,
}
