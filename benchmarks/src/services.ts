import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statfsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import {
  type RedisServer,
  type RgwServer,
  startRedisServer,
  startRgw,
} from '@agent-state/test-services'
import { fsSubjects } from './paths/fs.js'
import { memorySubjects } from './paths/memory.js'
import { redisSubjects } from './paths/redis.js'
import { s3Subjects } from './paths/s3.js'
import { sqliteSubjects } from './paths/sqlite.js'
import type { BackendKind, Subject } from './subject.js'

/**
 * The servers and directories of one run: started on first use, on free
 * loopback ports (the way the tests start them), stopped by `stop()`.
 */
export class Services {
  private redis: Promise<RedisServer> | undefined
  private rgw: Promise<RgwServer> | undefined
  private readonly root: string

  /** `dataRoot`: where fs and SQLite files go (default: a fresh temp directory). */
  constructor(dataRoot?: string) {
    this.root = dataRoot ?? mkdtempSync(join(tmpdir(), 'agent-state-bench-'))
  }

  /** A fresh directory for one backend's files. */
  dataDir(name: string): string {
    const dir = join(this.root, name)
    rmSync(dir, { recursive: true, force: true })
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    return dir
  }

  /** The Redis server (AOF `appendfsync everysec`, the test default). */
  redisServer(): Promise<RedisServer> {
    this.redis ??= startRedisServer()
    return this.redis
  }

  /** The Ceph RGW (memstore, `tcp_nodelay=1`), with room for the 1 MiB cases. */
  rgwServer(): Promise<RgwServer> {
    this.rgw ??= startRgw({ memstoreBytes: 6 * 1024 ** 3 })
    return this.rgw
  }

  /** Versions of everything measured, for the report. */
  async versions(): Promise<Record<string, string>> {
    const require = createRequire(import.meta.url)
    const versionOf = (name: string): string => {
      try {
        // Walk up from the resolved entry to the package's own package.json.
        let dir = dirname(require.resolve(name))
        for (;;) {
          try {
            const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
              name?: string
              version?: string
            }
            if (manifest.name === name && manifest.version !== undefined) return manifest.version
          } catch {
            // no package.json here
          }
          const parent = dirname(dir)
          if (parent === dir) return 'unknown'
          dir = parent
        }
      } catch {
        return 'not installed'
      }
    }
    const versions: Record<string, string> = { node: process.version }
    for (const name of [
      'ioredis',
      'better-sqlite3',
      '@aws-sdk/client-s3',
      'keyv',
      '@keyv/redis',
      'unstorage',
      'db0',
      'aws4fetch',
    ]) {
      versions[name] = versionOf(name)
    }
    versions.sqlite = await sqliteVersion()
    if (this.redis !== undefined) {
      const server = await this.redis
      versions['redis-server'] =
        commandOutput('redis-cli', ['-p', String(server.port), 'INFO', 'server']).match(
          /redis_version:(\S+)/,
        )?.[1] ?? 'unknown'
    }
    if (this.rgw !== undefined) {
      versions.radosgw =
        commandOutput('radosgw', ['--version']).match(/ceph version (\S+)/)?.[1] ?? 'unknown'
    }
    return versions
  }

  /** Stops the servers and removes the data directory. */
  async stop(): Promise<void> {
    const redis = this.redis
    const rgw = this.rgw
    this.redis = undefined
    this.rgw = undefined
    await Promise.allSettled([
      redis?.then((server) => server.stop()),
      rgw?.then((server) => server.stop()),
    ])
    rmSync(this.root, { recursive: true, force: true })
  }

  /** Free space and filesystem of the data directory, for the report. */
  diskInfo(): string {
    const stats = statfsSync(this.root)
    return `${this.root} (${Math.round((stats.bavail * stats.bsize) / 1024 ** 3)} GiB free)`
  }
}

function commandOutput(file: string, args: string[]): string {
  try {
    return execFileSync(file, args, { encoding: 'utf8', timeout: 10_000 })
  } catch {
    return ''
  }
}

async function sqliteVersion(): Promise<string> {
  const { default: Database } = await import('better-sqlite3')
  const db = new Database(':memory:')
  try {
    return (db.prepare('SELECT sqlite_version()').pluck().get() as string) ?? 'unknown'
  } finally {
    db.close()
  }
}

/** A backend's subjects and what they run on. */
export interface OpenedSubjects {
  readonly subjects: readonly Subject[]
  readonly setup: Record<string, string>
  close(): Promise<void>
}

/** Opens every path of one backend on the same server or in the same directory. */
export async function openSubjects(kind: BackendKind, services: Services): Promise<OpenedSubjects> {
  let subjects: Subject[]
  const setup: Record<string, string> = {}
  let afterClose = (): void => {}
  switch (kind) {
    case 'memory':
      subjects = await memorySubjects()
      setup.storage = 'this process'
      break
    case 'fs': {
      const dir = services.dataDir('fs')
      subjects = await fsSubjects(dir)
      setup.storage = `one directory per path under ${services.diskInfo()}`
      break
    }
    case 'sqlite': {
      const dir = services.dataDir('sqlite')
      subjects = await sqliteSubjects(dir)
      setup.storage = `one database file per path under ${services.diskInfo()}; WAL, synchronous=FULL`
      break
    }
    case 'redis': {
      const server = await services.redisServer()
      commandOutput('redis-cli', ['-p', String(server.port), 'CONFIG', 'RESETSTAT'])
      subjects = await redisSubjects(server.url, server.host, server.port)
      setup.storage = `one redis-server on 127.0.0.1 (appendonly yes, appendfsync everysec); key prefixes per path`
      afterClose = () => {
        // Server-side cost per command over the whole Redis section (all paths).
        const stats = commandOutput('redis-cli', [
          '-p',
          String(server.port),
          'INFO',
          'commandstats',
        ])
        setup.commandstats = stats
          .split('\n')
          .map((line) =>
            /^cmdstat_(\w+):calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/.exec(line.trim()),
          )
          .filter((match) => match !== null && Number(match[2]) >= 1000)
          .map((match) => `${match?.[1]} ${match?.[2]} calls ${match?.[3]} µs/call`)
          .join('; ')
      }
      break
    }
    case 's3': {
      const server = await services.rgwServer()
      subjects = await s3Subjects(server)
      setup.storage =
        'one Ceph RGW (memstore OSD: data in RAM; beast tcp_nodelay=1); one bucket per path'
      break
    }
  }
  return {
    subjects,
    setup,
    async close() {
      for (const subject of subjects) await subject.close()
      afterClose()
    },
  }
}
