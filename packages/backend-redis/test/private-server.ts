import type { Backend } from '@agent-state/core'
import { type RedisServer, startRedisServer } from '@agent-state/test-services'
import { Redis } from 'ioredis'
import { afterAll, beforeAll } from 'vitest'
import { createRedisBackend } from '../src/index.js'

/**
 * A test file's private redis-server, started before its tests and stopped
 * after them with every backend `backend(namespace)` opened on it and the
 * plain ioredis connection `raw()` (for the server's clock, counters and
 * direct edits). Call it at the top level of the file.
 */
export function privateRedisServer(): {
  readonly server: () => RedisServer
  readonly raw: () => Redis
  backend(namespace: string): Backend
} {
  let server: RedisServer | undefined
  let raw: Redis | undefined
  const opened: Backend[] = []
  beforeAll(async () => {
    server = await startRedisServer()
    raw = new Redis({ host: server.host, port: server.port, lazyConnect: true })
    await raw.connect()
  })
  afterAll(async () => {
    await Promise.all(opened.map((b) => b.close()))
    raw?.disconnect()
    await server?.stop()
  })
  const started = (): RedisServer => {
    if (server === undefined) throw new Error('the private redis-server is not started yet')
    return server
  }
  return {
    server: started,
    raw: () => {
      if (raw === undefined) throw new Error('the private redis-server is not started yet')
      return raw
    },
    backend(namespace) {
      const created = createRedisBackend({ port: started().port, namespace })
      opened.push(created)
      return created
    },
  }
}
