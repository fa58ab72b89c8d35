import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createMemoryBackend } from '@agent-state/memory'
import { createPostgresBackend } from '@agent-state/postgres'
import { createRedisBackend } from '@agent-state/redis'
import { createSqliteBackend } from '@agent-state/sqlite'
import {
  type PostgresServer,
  type RedisServer,
  startPostgresServer,
  startRedisServer,
} from '@agent-state/test-services'

/**
 * The backends the `agent-state ui` benchmarks (`ui-views.ts`, `ui-render.ts`) measure, one
 * fresh namespace (`cell`) each: `memory`, `fs` and `sqlite` under `root`, `redis` on a
 * redis-server and `postgres` on a PostgreSQL 15 started on first use, as the tests start them. The seeding writes 100,000 keys:
 * SQLite commits without an fsync each (`synchronous: 'NORMAL'`), the filesystem backend
 * without fsync; the views only read, and reads are the same either way.
 */
export class UiBenchBackends {
  private redis: Promise<RedisServer> | undefined
  private postgres: Promise<PostgresServer> | undefined

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
      case 'postgres': {
        this.postgres ??= startPostgresServer()
        const { url } = await this.postgres
        return createPostgresBackend({ connectionString: url, namespace: cell })
      }
      default:
        throw new Error(`unknown backend ${name}`)
    }
  }

  /** Stops the servers that were started. */
  async stop(): Promise<void> {
    await this.redis?.then((server) => server.stop())
    await this.postgres?.then((server) => server.stop())
  }
}
