import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { createPostgresBackend } from '@agent-state/postgres'
import { createRedisBackend } from '@agent-state/redis'
import { createS3Backend } from '@agent-state/s3'
import { createSqliteBackend } from '@agent-state/sqlite'
import { freshName, postgresConfig, redisConfig, s3Config } from './services.js'

/**
 * Storage shared by several backend instances, like the contract suite's
 * factories: `create()` returns a new instance on the same underlying storage,
 * so tests can race "separate clients".
 */
export interface BackendFixture {
  create(): Backend
  /** Closes every instance created and removes the storage. */
  cleanup(): Promise<void>
}

/** A backend a package's conformance tests run against. */
export interface BackendFactory {
  readonly name: string
  /** Whether instances in several processes may share the storage (enables the two-process tests). */
  readonly multiProcess: boolean
  setup(): BackendFixture
}

function tracked(make: () => Backend, remove: () => void): BackendFixture {
  const opened: Backend[] = []
  return {
    create() {
      const backend = make()
      opened.push(backend)
      return backend
    },
    async cleanup() {
      for (const backend of opened) await backend.close()
      remove()
    },
  }
}

/** Names that keep one package's test storage apart from another's. */
export interface BackendTargetsOptions {
  /** Temp-directory names (`agent-state-<label>-sqlite-…`) and the sqlite/fs namespace. */
  readonly label: string
  /** Prefix of the memory, Redis, S3 and PostgreSQL namespaces; defaults to `label`. */
  readonly namePrefix?: string
}

/**
 * Every backend available in the repository. Redis, S3 and PostgreSQL use the servers the
 * global setup started (`startBackendServers`); each fixture takes a fresh
 * namespace on them, and the servers' data goes when they stop.
 */
export function backendTargets(options: BackendTargetsOptions): readonly BackendFactory[] {
  const { label } = options
  const prefix = options.namePrefix ?? label
  let counter = 0
  return [
    {
      name: 'memory',
      multiProcess: false,
      setup() {
        const store = createMemoryStore()
        const namespace = `${prefix}-${++counter}`
        return tracked(
          () => createMemoryBackend({ store, namespace }),
          () => undefined,
        )
      },
    },
    {
      name: 'sqlite',
      multiProcess: true,
      setup() {
        const dir = mkdtempSync(join(tmpdir(), `agent-state-${label}-sqlite-`))
        const path = join(dir, 'state.db')
        return tracked(
          () => createSqliteBackend({ path, namespace: label }),
          () => rmSync(dir, { recursive: true, force: true }),
        )
      },
    },
    {
      name: 'fs',
      multiProcess: true,
      setup() {
        const root = mkdtempSync(join(tmpdir(), `agent-state-${label}-fs-`))
        return tracked(
          () => createFsBackend({ root, namespace: label }),
          () => rmSync(root, { recursive: true, force: true }),
        )
      },
    },
    {
      name: 'redis',
      multiProcess: true,
      setup() {
        const { host, port } = redisConfig()
        const namespace = freshName(prefix)
        return tracked(
          () => createRedisBackend({ host, port, namespace }),
          () => undefined,
        )
      },
    },
    {
      name: 's3',
      multiProcess: true,
      setup() {
        const config = s3Config()
        const namespace = freshName(prefix)
        return tracked(
          () =>
            createS3Backend({
              endpoint: config.endpoint,
              region: config.region,
              forcePathStyle: true,
              credentials: {
                accessKeyId: config.accessKeyId,
                secretAccessKey: config.secretAccessKey,
              },
              bucket: config.bucket,
              // Idempotent; the first instance of the run creates the bucket.
              createBucket: true,
              namespace,
            }),
          () => undefined,
        )
      },
    },
    {
      name: 'postgres',
      multiProcess: true,
      setup() {
        const { url } = postgresConfig()
        const namespace = freshName(prefix)
        return tracked(
          () => createPostgresBackend({ connectionString: url, namespace, poolSize: 3 }),
          () => undefined,
        )
      },
    },
  ]
}
