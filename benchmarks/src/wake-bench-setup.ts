/**
 * What the wake benchmarks (`bench:wakes`, `bench:wakes-notified`) share:
 * fresh storages per cell on fs, SQLite, Redis and S3 (the servers started
 * once, on first use), percentiles, and how results are written.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createRedisBackend } from '@agent-state/redis'
import { createS3Backend } from '@agent-state/s3'
import { createSqliteBackend } from '@agent-state/sqlite'
import { startRedisServer, startRgw } from '@agent-state/test-services'
import { quantileSorted, sortedCopy } from './stats.js'

/** Fresh storages of one benchmark run, under one temporary directory. */
export interface WakeBenchStorages {
  /** A factory of instances over one fresh storage of backend `name` for `cell` (each call another instance: another process). */
  open(name: string, cell: string): Promise<() => Backend>
  /** Stops the servers started and removes the directory. */
  stop(): Promise<void>
}

/** Storages named `<prefix>-<cell>` (namespaces) under a temporary directory. */
export function wakeBenchStorages(prefix: string): WakeBenchStorages {
  let redis: ReturnType<typeof startRedisServer> | undefined
  let rgw: ReturnType<typeof startRgw> | undefined
  const root = mkdtempSync(join(tmpdir(), `agent-state-${prefix}-`))
  return {
    async open(name, cell) {
      const namespace = `${prefix}-${cell}`
      switch (name) {
        case 'fs': {
          const dir = join(root, cell)
          mkdirSync(dir, { recursive: true, mode: 0o700 })
          return () => createFsBackend({ root: dir, namespace })
        }
        case 'sqlite': {
          const path = join(root, `${cell}.db`)
          return () => createSqliteBackend({ path, namespace })
        }
        case 'redis': {
          redis ??= startRedisServer()
          const { host, port } = await redis
          return () => createRedisBackend({ host, port, namespace })
        }
        case 's3': {
          rgw ??= startRgw({ memstoreBytes: 2 * 1024 ** 3 })
          const target = await rgw
          return () =>
            createS3Backend({
              bucket: 'wake-bench',
              namespace,
              endpoint: target.endpoint,
              region: target.region,
              forcePathStyle: true,
              createBucket: true,
              credentials: {
                accessKeyId: target.accessKeyId,
                secretAccessKey: target.secretAccessKey,
              },
            })
        }
        default:
          throw new Error(`unknown backend ${name}`)
      }
    },
    async stop() {
      await Promise.all([
        redis?.then((server) => server.stop()),
        rgw?.then((server) => server.stop()),
      ])
      rmSync(root, { recursive: true, force: true })
    },
  }
}

/** `backend` with `count(method)` called on every method call (a dispatcher's round trips). */
export function countingCalls(backend: Backend, count: (method: string) => void): Backend {
  return new Proxy(backend, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        count(String(property))
        return value.apply(target, args)
      }
    },
  })
}

/**
 * Counts the keys and groups `backend.list` returns, by replacing `list` on
 * the instance itself: a backend's own watch lists through it (SQLite's
 * polling watch does), which a proxy around the instance would not see.
 */
export function countListed(backend: Backend, count: (keys: number) => void): void {
  const list = backend.list.bind(backend)
  backend.list = async (options) => {
    const page = await list(options)
    count(page.entries.length + (page.prefixes?.length ?? 0))
    return page
  }
}

/** The `q` quantile (0 to 1) of `values`, nearest rank; `NaN` when empty. */
export function quantile(values: readonly number[], q: number): number {
  return quantileSorted(sortedCopy(values), q)
}

/** The 1-minute load average, one decimal: what every wake result quotes beside its figures. */
export function loadAverage(): string {
  return loadavg()[0]?.toFixed(1) ?? '?'
}

/** Writes `results/<name>.json` and `.md` and prints the table. */
export function writeWakeResults(name: string, json: unknown, table: string): void {
  mkdirSync(new URL('../results/', import.meta.url), { recursive: true })
  writeFileSync(
    new URL(`../results/${name}.json`, import.meta.url),
    `${JSON.stringify(json, null, 2)}\n`,
  )
  writeFileSync(new URL(`../results/${name}.md`, import.meta.url), table)
  console.info(table)
}
