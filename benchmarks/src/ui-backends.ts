import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createMemoryBackend } from '@agent-state/memory'
import { createRedisBackend } from '@agent-state/redis'
import { createSqliteBackend } from '@agent-state/sqlite'
import { type RedisServer, startRedisServer } from '@agent-state/test-services'

/**
 * The backends the `agent-state ui` benchmarks (`ui-views.ts`, `ui-render.ts`) measure, one
 * fresh namespace (`cell`) each: `memory`, `fs` and `sqlite` under `root`, and `redis` on a
 * redis-server started on first use, as the tests start it. The seeding writes 100,000 keys:
 * SQLite commits without an fsync each (`synchronous: 'NORMAL'`), the filesystem backend
 * without fsync; the views only read, and reads are the same either way.
 */
export class UiBenchBackends {
  private redis: Promise<RedisServer> | undefined

  constructor(private readonly root: string) {}

  async open(name: string, cell: string): Promise<Backend> {
    switch (name) {
      case 'memory':
        return createMemoryBackend({ namespace: cell })
      case 'fs':
        return createFsBackend({ root: join(this.root, cell), namespace: 'ui', fsync: false })
      case 'sqlite':
        return createSqliteBackend({ path: join(this.root, `${cell}.db`), synchronous: 'NORMAL' })
      case 'redis': {
        this.redis ??= startRedisServer()
        const { host, port } = await this.redis
        return createRedisBackend({ host, port, namespace: cell })
      }
      default:
        throw new Error(`unknown backend ${name}`)
    }
  }

  /** Stops the redis-server, if one was started. */
  async stop(): Promise<void> {
    await this.redis?.then((server) => server.stop())
  }
}
