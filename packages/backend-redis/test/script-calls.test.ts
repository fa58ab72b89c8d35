import { type RedisServer, startRedisServer } from '@agent-state/test-services'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedisBackend } from '../src/index.js'
import { DELETE, PUT } from '../src/lua-scripts.js'
import { type ScriptMutant, withScriptMutant } from './script-mutant.js'

/**
 * The server commands each write costs, counted by the server itself
 * (`INFO commandstats` counts the commands a script runs): a count, so it is
 * the same on a loaded machine. The server is this file's own, so no other
 * test's commands are counted. What the counts pin down (issue 34): an
 * overwrite and a compare-and-set run `TIME`, one `HMGET`, one `HSET` and the
 * change hint, and never touch the listing index or the registered keys; only
 * a create adds the key there (`ZADD`, `SADD`); a plain delete reads no clock.
 */

const bytes = (text: string) => new TextEncoder().encode(text)
const ROUNDS = 5
let server: RedisServer
/** The counting's own connection (its INFO and RESETSTAT are left out of the counts). */
let stats: Redis

beforeAll(async () => {
  server = await startRedisServer()
  stats = new Redis({ host: server.host, port: server.port })
})
afterAll(async () => {
  stats.disconnect()
  await server.stop()
})

/** Calls per command name since the last `CONFIG RESETSTAT`. */
async function commandCalls(): Promise<Record<string, number>> {
  const info = await stats.info('commandstats')
  const calls: Record<string, number> = {}
  for (const match of info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+),/gm)) {
    calls[match[1] as string] = Number(match[2])
  }
  return calls
}

/** The commands `step` ran on the server, per command name, each step run `ROUNDS` times. */
async function countOf(step: (round: number) => Promise<unknown>) {
  await stats.config('RESETSTAT')
  for (let round = 0; round < ROUNDS; round++) await step(round)
  const calls = await commandCalls()
  // The counting's own commands.
  delete calls.info
  delete calls['config|resetstat']
  return calls
}

/** Counts of the write scenarios, in a namespace of their own. */
async function writeCounts(namespace: string) {
  const backend = createRedisBackend({ port: server.port, namespace })
  try {
    // Every script loaded (a first EVALSHA is refused NOSCRIPT and repeated as EVAL) before counting.
    await backend.put('kept', bytes('v0'))
    await backend.delete('never-written')
    const overwrite = await countOf(() => backend.put('kept', bytes('v1')))
    const compareAndSet = await countOf(async () => {
      const current = await backend.head('kept')
      await backend.put('kept', bytes('v2'), { ifMatch: current?.version as string })
    })
    const create = await countOf((round) => backend.put(`new-${round}`, bytes('v')))
    const remove = await countOf((round) => backend.delete(`new-${round}`))
    return { overwrite, compareAndSet, create, remove }
  } finally {
    await backend.destroy?.()
    await backend.close()
  }
}

const per = (counts: Record<string, number>) =>
  Object.fromEntries(Object.entries(counts).map(([name, n]) => [name, n / ROUNDS]))

/** What each write may cost, per operation. */
const EXPECTED = {
  overwrite: { evalsha: 1, hmget: 1, time: 1, hset: 1, spublish: 1 },
  compareAndSet: { hmget: 2, evalsha: 1, time: 1, hset: 1, spublish: 1 },
  create: { evalsha: 1, hmget: 1, time: 1, hset: 1, spublish: 1, zadd: 1, sadd: 1 },
  remove: { evalsha: 1, hmget: 1, hdel: 1, zrem: 1, spublish: 1 },
}

function expectedCounts(counts: Awaited<ReturnType<typeof writeCounts>>): void {
  expect(per(counts.overwrite)).toEqual(EXPECTED.overwrite)
  expect(per(counts.compareAndSet)).toEqual(EXPECTED.compareAndSet)
  expect(per(counts.create)).toEqual(EXPECTED.create)
  expect(per(counts.remove)).toEqual(EXPECTED.remove)
}

/**
 * Mutants that keep every contract test green (they write the same data) but
 * cost more server commands; the count check must catch each.
 */
const MUTANTS: readonly { name: string; mutant: ScriptMutant }[] = [
  {
    name: 'an overwrite re-indexes its key',
    mutant: {
      script: PUT,
      from: "if not v then redis.call('ZADD'",
      to: "if true then redis.call('ZADD'",
    },
  },
  {
    name: 'put reads the clock twice',
    mutant: {
      script: PUT,
      from: 'local now = now_ms()',
      to: 'local now = now_ms() + 0 * now_ms()',
    },
  },
  {
    name: 'a plain delete reads the clock',
    mutant: { script: DELETE, from: 'local v = f[1]', to: "local v = f[1] redis.call('TIME')" },
  },
]

describe('server commands per write (INFO commandstats)', () => {
  it('an overwrite or compare-and-set touches neither the index nor the key set; a plain delete reads no clock', async () => {
    expectedCounts(await writeCounts('calls'))
  })

  for (const { name, mutant } of MUTANTS) {
    it(`catches the mutant: ${name}`, async () => {
      const counts = await withScriptMutant(mutant, () => writeCounts(`calls-${name.length}`))
      expect(() => expectedCounts(counts)).toThrow(/expected/)
    })
  }
})
