/**
 * Server instructions of the single steps a native queue script takes (issue 32): each step alone
 * in a script, run through `EVALSHA` under callgrind, against an empty script (the call itself),
 * with a tail record carrying one event and a head record as the scripts find them. Load does not
 * change the figures. Used to choose what `queue-scripts.ts` reads how.
 *
 * `cd benchmarks && node --conditions=@agent-state/source --import tsx --no-warnings src/queue-lua-steps.ts`
 */
import { Redis } from 'ioredis'
import { PRELUDE } from '../../packages/backend-redis/src/lua-scripts.js'
import { startRedisUnderCallgrind } from './callgrind-redis.js'

const CALLS = 1000
const event =
  '{"format":"agent-state/daemon-event","seq":1234,"eventId":"0123456789abcdef01234567","event":{"kind":"file_changed","path":"src/new-123.ts"},"triggeredAt":"2026-12-03T08:30:00.000Z"}'
const tail = `{"format":"agent-state/daemon-tail","next":1235,"last":${event}}`
const head =
  '{"format":"agent-state/daemon-head","head":200,"attempts":0,"iterations":5,"claim":null}'
const steps: [string, string][] = [
  ['empty script (the EVALSHA itself)', 'return 1'],
  ['cjson.decode of the tail', 'local t = cjson.decode(ARGV[1]) return 1'],
  ['cjson.decode of the head', 'local t = cjson.decode(ARGV[2]) return 1'],
  [
    "the tail's next by pattern",
    `local n = tonumber(string.match(ARGV[1], '^{"format":"agent%-state/daemon%-tail","next":(%d+),"last":[{n]')) return 1`,
  ],
  ["the helpers' definitions (PRELUDE)", `${PRELUDE} return 1`],
  ["redis.call('TIME')", `redis.call('TIME') return 1`],
  [
    "redis.call('SPUBLISH') without subscribers",
    `redis.call('SPUBLISH', 'chan', 'member') return 1`,
  ],
  [
    "redis.call('HMGET') of 6 fields",
    `redis.call('HMGET', KEYS[1], 'v','d','r','lt','le','li') return 1`,
  ],
  [
    "3 string.format('%d')",
    `local a = string.format('%d', 12345) local b = string.format('%d', 1234) local c = string.format('%d', 1234567) return 1`,
  ],
]

const server = await startRedisUnderCallgrind()
const client = new Redis({ host: server.host, port: server.port })
try {
  await client.hset('{x}k', 'v', '1.abc.10', 'd', tail, 'r', '1')
  console.log('| step alone in a script | server instructions per call |')
  console.log('|---|---:|')
  for (const [name, source] of steps) {
    const sha = (await client.script('LOAD', source)) as string
    for (let i = 0; i < 20; i++) await client.evalsha(sha, 1, '{x}k', tail, head)
    server.zero()
    for (let i = 0; i < CALLS; i++) await client.evalsha(sha, 1, '{x}k', tail, head)
    console.log(
      `| ${name} | ${Math.round(server.instructions().total / CALLS).toLocaleString('en')} |`,
    )
  }
} finally {
  client.disconnect()
  await server.stop()
}
