import { createRedisBackend } from '@agent-state/redis'
import KeyvRedis from '@keyv/redis'
import { Redis } from 'ioredis'
import { Keyv } from 'keyv'
import { createStorage } from 'unstorage'
import redisDriver from 'unstorage/drivers/redis'
import { type CasToken, populatedKey, type Subject } from '../subject.js'
import { agentStateSubject } from './agent-state.js'
import { keyvSubject, unstorageSubject } from './peers.js'

/** The baseline's compare-and-set: HGET the version, compare, HSET value and version. */
const CAS_SCRIPT = `
if redis.call('HGET', KEYS[1], 'v') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'd', ARGV[2], 'v', ARGV[3])
  return 1
end
return 0`

type CasClient = Redis & {
  rawCas(key: string, expected: string, value: Buffer, next: string): Promise<number>
}

/** ioredis sends only a `Buffer` as bytes (a plain Uint8Array becomes "1,2,3"); wrap without copying. */
const asBuffer = (value: Uint8Array): Buffer =>
  Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength)

/**
 * ioredis doing the least equivalent work: SET/GET/EXISTS/DEL on string
 * keys, SET NX for create, one EVALSHA (the baseline's CAS script) per
 * compare-and-set, and a sorted set scanned with ZRANGE BYLEX for listing.
 * Default ioredis settings (no auto-pipelining), like the backend.
 */
export function rawRedisSubject(url: string): Subject {
  const client = new Redis(url) as CasClient
  client.defineCommand('rawCas', { numberOfKeys: 1, lua: CAS_SCRIPT })
  const k = (key: string): string => `raw:${key}`
  const index = (prefix: string): string => `raw-index:${prefix}`
  let versions = 0
  const nextVersion = (): string => `${process.pid}-${++versions}`

  const cas = async (key: string, value: Uint8Array, token: CasToken): Promise<string> => {
    const next = nextVersion()
    if ((await client.rawCas(k(key), String(token), asBuffer(value), next)) !== 1) {
      throw new Error(`raw CAS conflict on ${key}`)
    }
    return next
  }
  return {
    backend: 'redis',
    path: 'raw',
    label: 'raw ioredis',
    notes: {
      put: 'SET',
      get: 'GET (getBuffer)',
      head: 'EXISTS',
      cas: 'EVALSHA: HGET version, compare, HSET value + version',
      create: 'SET NX',
      lease: 'three EVALSHA compare-and-sets of a lease hash',
      list: 'ZRANGE BYLEX LIMIT on a sorted-set index of the population',
    },
    async put(key, value) {
      await client.set(k(key), asBuffer(value))
    },
    async get(key) {
      try {
        return await client.getBuffer(k(key))
      } catch (error) {
        // Compare-and-set keys are hashes { d, v }; the get workload never reads them.
        if (!String((error as Error).message).startsWith('WRONGTYPE')) throw error
        return client.hgetBuffer(k(key), 'd')
      }
    },
    async head(key) {
      return (await client.exists(k(key))) === 1
    },
    async delete(key) {
      await client.del(k(key))
    },
    async casInit(key, value) {
      const version = nextVersion()
      await client.hset(k(key), 'd', asBuffer(value), 'v', version)
      return version
    },
    cas,
    async create(key, value) {
      const reply = await client.set(k(key), asBuffer(value), 'NX')
      if (reply !== 'OK') throw new Error(`raw create: ${key} exists`)
    },
    async leaseCycle(key) {
      const lease = `${key}#lease`
      let token: string | null = await client.hget(k(lease), 'v')
      if (token === null) {
        token = nextVersion()
        await client.hset(k(lease), 'd', '', 'v', token)
      }
      let current: CasToken = token
      for (let step = 0; step < 3; step++) current = await cas(lease, new Uint8Array(0), current)
    },
    async listPage(prefix, limit, cursor) {
      const start = cursor === undefined ? `[${prefix}` : `(${cursor}`
      const rows = await client.zrange(
        index(prefix),
        start,
        `(${prefix}\u{10FFFF}`,
        'BYLEX',
        'LIMIT',
        0,
        limit + 1,
      )
      if (rows.length <= limit) return { keys: rows }
      const keys = rows.slice(0, limit)
      return { keys, cursor: keys[keys.length - 1] as string }
    },
    async populate(prefix, count, value) {
      const buffer = Buffer.from(value)
      for (let from = 0; from < count; from += 1000) {
        const pipeline = client.pipeline()
        for (let i = from; i < Math.min(count, from + 1000); i++) {
          const key = populatedKey(prefix, i)
          pipeline.set(k(key), buffer)
          pipeline.zadd(index(prefix), 0, key)
        }
        await pipeline.exec()
      }
    },
    async close() {
      client.disconnect()
    },
  }
}

/** agent-state Redis, raw ioredis, Keyv (@keyv/redis) and unstorage (redis driver) on one server. */
export async function redisSubjects(url: string, host: string, port: number): Promise<Subject[]> {
  const keyvStore = new KeyvRedis(url)
  const keyv = new Keyv({ store: keyvStore, namespace: 'keyv', throwOnErrors: true })
  const storage = createStorage({ driver: redisDriver({ url, base: 'uns' }) })
  const subjects: Subject[] = [
    agentStateSubject(createRedisBackend({ host, port, namespace: 'bench' }), 'redis'),
    rawRedisSubject(url),
    keyvSubject(keyv, 'redis', 'Keyv (@keyv/redis)', async () => {
      await keyv.disconnect()
    }),
    unstorageSubject(storage, 'redis', 'unstorage (redis driver, ioredis)', async () => {}),
  ]
  return subjects
}
