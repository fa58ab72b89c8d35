import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { createRedisBackend } from '@agent-state/redis'
import { createS3Backend } from '@agent-state/s3'
import { createSqliteBackend } from '@agent-state/sqlite'
import { freshName, redisConfig, s3Config } from './services.js'

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

/** A backend the runtime's conformance tests run against. */
export interface BackendFactory {
  readonly name: string
  /** Whether instances in several processes may share the storage (enables the two-process tests). */
  readonly multiProcess: boolean
  setup(): BackendFixture
}

let counter = 0

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

/**
 * Every backend available in the repository. Redis and S3 use the servers the
 * global setup started (`test/global-setup.ts`); each fixture takes a fresh
 * namespace on them, and the servers' data goes when they stop.
 */
export const BACKENDS: readonly BackendFactory[] = [
  {
    name: 'memory',
    multiProcess: false,
    setup() {
      const store = createMemoryStore()
      const namespace = `langgraph-${++counter}`
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
      const dir = mkdtempSync(join(tmpdir(), 'agent-state-langgraph-sqlite-'))
      const path = join(dir, 'state.db')
      return tracked(
        () => createSqliteBackend({ path, namespace: 'langgraph' }),
        () => rmSync(dir, { recursive: true, force: true }),
      )
    },
  },
  {
    name: 'fs',
    multiProcess: true,
    setup() {
      const root = mkdtempSync(join(tmpdir(), 'agent-state-langgraph-fs-'))
      return tracked(
        () => createFsBackend({ root, namespace: 'langgraph' }),
        () => rmSync(root, { recursive: true, force: true }),
      )
    },
  },
  {
    name: 'redis',
    multiProcess: true,
    setup() {
      const { host, port } = redisConfig()
      const namespace = freshName('langgraph')
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
      const namespace = freshName('langgraph')
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
]
