import {
  type RedisServer,
  type RgwServer,
  startRedisServer,
  startRgw,
} from '@agent-state/test-services'
import type { TestProject } from 'vitest/node'
import type { ServicesConfig } from './services.js'

/**
 * Starts one private `redis-server` (with a password, so a wrong one can be
 * tried) and one private Ceph RGW for the whole run, and hands their settings
 * to the tests. A server that cannot start fails the run: nothing skips.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const password = 'cli-test-pw-1f3a'
  const [redis, rgw] = await Promise.allSettled([startRedisServer({ password }), startRgw()])
  const started = [redis, rgw].flatMap((result) =>
    result.status === 'fulfilled' ? [result.value as RedisServer | RgwServer] : [],
  )
  const stopAll = async (): Promise<void> => {
    await Promise.all(started.map((server) => server.stop()))
  }
  if (redis.status === 'rejected' || rgw.status === 'rejected') {
    await stopAll()
    throw redis.status === 'rejected' ? redis.reason : (rgw as PromiseRejectedResult).reason
  }
  const config: ServicesConfig = {
    redis: { host: redis.value.host, port: redis.value.port, password },
    s3: {
      endpoint: rgw.value.endpoint,
      region: rgw.value.region,
      accessKeyId: rgw.value.accessKeyId,
      secretAccessKey: rgw.value.secretAccessKey,
    },
  }
  project.provide('cliServices', config)
  return stopAll
}
