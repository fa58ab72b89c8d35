import {
  type PostgresServer,
  type RedisServer,
  type RgwServer,
  startPostgresServer,
  startRedisServer,
  startRgw,
} from '@agent-state/test-services'
import type { TestProject } from 'vitest/node'
import { buildCli, type CliBundle } from './cli-bundle.js'
import type { ServicesConfig } from './services.js'

/**
 * Starts one private `redis-server` (with a password, so a wrong one can be
 * tried), one private Ceph RGW and one private PostgreSQL for the whole run, and hands their settings
 * to the tests. A server that cannot start fails the run: nothing skips.
 * Meanwhile it builds the command the tests run (test/cli-bundle.ts), unless
 * `AGENT_STATE_CLI_TSX=1` asks for every test to start the sources through tsx.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const password = 'cli-test-pw-1f3a'
  const viaTsx = process.env.AGENT_STATE_CLI_TSX === '1'
  const [redis, rgw, cli, postgres] = await Promise.allSettled([
    startRedisServer({ password }),
    startRgw(),
    viaTsx ? Promise.resolve(undefined) : buildCli(),
    startPostgresServer(),
  ])
  const started = [redis, rgw, postgres].flatMap((result) =>
    result.status === 'fulfilled' ? [result.value as RedisServer | RgwServer | PostgresServer] : [],
  )
  const bundle: CliBundle | undefined = cli.status === 'fulfilled' ? cli.value : undefined
  const stopAll = async (): Promise<void> => {
    bundle?.remove()
    await Promise.all(started.map((server) => server.stop()))
  }
  if (
    redis.status === 'rejected' ||
    rgw.status === 'rejected' ||
    cli.status === 'rejected' ||
    postgres.status === 'rejected'
  ) {
    await stopAll()
    throw [redis, rgw, cli, postgres].find(
      (r): r is PromiseRejectedResult => r.status === 'rejected',
    )?.reason
  }
  const config: ServicesConfig = {
    redis: { host: redis.value.host, port: redis.value.port, password },
    s3: {
      endpoint: rgw.value.endpoint,
      region: rgw.value.region,
      accessKeyId: rgw.value.accessKeyId,
      secretAccessKey: rgw.value.secretAccessKey,
    },
    postgres: { url: postgres.value.url },
  }
  project.provide('cliServices', config)
  project.provide(
    'cliBundle',
    bundle === undefined ? null : { bin: bundle.bin, scripts: bundle.scripts },
  )
  return stopAll
}
