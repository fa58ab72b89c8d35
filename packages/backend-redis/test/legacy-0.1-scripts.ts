import type { Redis } from 'ioredis'
import type { RedisKeyLayout } from '../src/index.js'

/**
 * The put and delete scripts of @agent-state/redis 0.1, verbatim: the layout
 * before versions carried the value size (`<revision>.<random>`). The upgrade
 * tests run them against a real server to play a 0.1 client, also one still
 * writing while 0.2 clients run (a rolling upgrade).
 */
const PRELUDE_0_1 = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function num(x) return string.format('%.0f', x) end
-- Nil when the lease allows the write; an error reply otherwise.
local function lease_check(given, now, lh, lt, le)
  if given == '' then
    if lt and tonumber(le) > now then return {'LEASE_HELD', lh, le} end
  elseif (not lt) or lt ~= given or tonumber(le) <= now then
    return {'LEASE_LOST', lt or ''}
  end
  return nil
end
local function mismatch(key, v, w, t)
  return {'PRECONDITION_FAILED', v or '', tostring(redis.call('HSTRLEN', key, 'd')), w or '', t or ''}
end
`

const PUT_0_1 = `${PRELUDE_0_1}
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], 'v', 'r', 'lh', 'lt', 'le', 'w', 't')
local v = f[1]
local bad = lease_check(ARGV[6], now, f[3], f[4], f[5])
if bad then return bad end
if (ARGV[4] ~= '' and v ~= ARGV[4]) or (ARGV[5] == '1' and v) then
  return mismatch(KEYS[1], v, f[6], f[7])
end
local rev = (tonumber(f[2]) or 0) + 1
local version = num(rev) .. '.' .. ARGV[7]
redis.call('HSET', KEYS[1], 'v', version, 'd', ARGV[2], 'w', ARGV[3], 't', num(now), 'r', num(rev))
-- An existing value is already indexed, and a key with a revision is already registered.
if not v then redis.call('ZADD', KEYS[2], 0, ARGV[1]) end
if not f[2] then redis.call('SADD', KEYS[3], ARGV[1]) end
return {'OK', version, num(now)}
`

const DELETE_0_1 = `${PRELUDE_0_1}
local now = now_ms()
local f = redis.call('HMGET', KEYS[1], 'v', 'lh', 'lt', 'le', 'w', 't')
local v = f[1]
local bad = lease_check(ARGV[3], now, f[2], f[3], f[4])
if bad then return bad end
if ARGV[2] ~= '' and v ~= ARGV[2] then return mismatch(KEYS[1], v, f[5], f[6]) end
if not v then return {'OK', '0'} end
redis.call('HDEL', KEYS[1], 'v', 'd', 'w', 't')
redis.call('HINCRBY', KEYS[1], 'r', 1)
redis.call('ZREM', KEYS[2], ARGV[1])
return {'OK', '1'}
`

/** A 0.1 client's `put` (unconditional, no writer, no lease); resolves the version it wrote. */
export async function putAs01(
  redis: Redis,
  layout: RedisKeyLayout,
  key: string,
  value: string,
  suffix: string,
): Promise<string> {
  const reply = (await redis.eval(
    PUT_0_1,
    3,
    layout.record(key),
    layout.index,
    layout.records,
    key,
    value,
    '',
    '',
    '',
    '',
    suffix,
  )) as string[]
  if (reply[0] !== 'OK') throw new Error(`0.1 put failed: ${reply.join(' ')}`)
  return reply[1] as string
}

/** A 0.1 client's unconditional `delete`; resolves whether a value existed. */
export async function deleteAs01(
  redis: Redis,
  layout: RedisKeyLayout,
  key: string,
): Promise<boolean> {
  const reply = (await redis.eval(
    DELETE_0_1,
    2,
    layout.record(key),
    layout.index,
    key,
    '',
    '',
  )) as string[]
  if (reply[0] !== 'OK') throw new Error(`0.1 delete failed: ${reply.join(' ')}`)
  return reply[1] === '1'
}
