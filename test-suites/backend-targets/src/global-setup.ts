import type { TestProject } from 'vitest/node'
// Relative imports: global setup files resolve outside the test environments' export conditions.
import { startChildBundleRun } from '../../child-bundles/src/output-root.js'
import {
  type PostgresServer,
  type RedisServer,
  type RgwServer,
  startPostgresServer,
  startRedisServer,
  startRgw,
} from '../../services/src/index.js'
import type { PostgresTestConfig, RedisTestConfig, S3TestConfig } from './services.js'

/** What differs between the packages' runs. */
export interface BackendServersOptions {
  /** The S3 bucket the tests use on the run's RGW (created on first use). */
  readonly bucket: string
}

/**
 * Starts one private `redis-server`, one private Ceph RGW and one private
 * PostgreSQL for the whole run
 * and hands their connection settings to the tests through `provide` (read them
 * with `redisConfig()` / `s3Config()`). A server that cannot start fails the
 * run: the Redis and S3 suites never skip. Also makes the run's one directory
 * for child bundles (see `@agent-state/child-bundles`), so that the bundles of
 * a killed test worker go at teardown instead of staying in the temp directory.
 * Call it from a package's vitest global setup file; resolves the teardown.
 */
export async function startBackendServers(
  project: TestProject,
  options: BackendServersOptions,
): Promise<() => Promise<void>> {
  const [redis, rgw, postgres] = await Promise.allSettled([
    startRedisServer(),
    startRgw(),
    // The suites here test the runtime and the adapters on each backend, never a server crash:
    // commits need not wait for their WAL flush (a server crash could lose the last ~0.6 s; a
    // client killed with -9 loses nothing), as the Redis server here runs `appendfsync everysec`.
    // With a flush per commit, the daemon-queue kill -9 test did not finish in 10 minutes at load 40.
    startPostgresServer({ settings: { synchronous_commit: 'off' } }),
  ])
  const started = [redis, rgw, postgres].flatMap((result) =>
    result.status === 'fulfilled' ? [result.value as RedisServer | RgwServer | PostgresServer] : [],
  )
  const endBundleRun = startChildBundleRun()
  const stopAll = async (): Promise<void> => {
    try {
      await Promise.all(started.map((server) => server.stop()))
    } finally {
      endBundleRun()
    }
  }
  if (redis.status === 'rejected' || rgw.status === 'rejected' || postgres.status === 'rejected') {
    await stopAll()
    const failed = [redis, rgw, postgres].find((result) => result.status === 'rejected')
    throw (failed as PromiseRejectedResult).reason
  }
  const redisConfig: RedisTestConfig = { host: redis.value.host, port: redis.value.port }
  const s3Config: S3TestConfig = {
    endpoint: rgw.value.endpoint,
    region: rgw.value.region,
    accessKeyId: rgw.value.accessKeyId,
    secretAccessKey: rgw.value.secretAccessKey,
    bucket: options.bucket,
  }
  project.provide('backendTargetsRedis', redisConfig)
  project.provide('backendTargetsS3', s3Config)
  const postgresConfig: PostgresTestConfig = { url: postgres.value.url }
  project.provide('backendTargetsPostgres', postgresConfig)
  return stopAll
}
