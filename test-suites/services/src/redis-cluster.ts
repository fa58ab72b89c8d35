import { freePort } from './free-port.js'
import { type RedisServer, redisCli, startRedisServer } from './redis-server.js'

/** Options of {@link startRedisCluster}. */
export interface RedisClusterOptions {
  /** Number of masters (no replicas). Default 3, at least 3 (what `redis-cli --cluster create` needs). */
  readonly masters?: number
  /** Milliseconds to wait for `cluster_state:ok`. Default 30 000. */
  readonly startTimeoutMs?: number
}

/** A local Redis Cluster of masters without replicas. */
export interface RedisCluster {
  /** Every master, as seed nodes for a cluster client. */
  readonly nodes: readonly { readonly host: string; readonly port: number }[]
  /** The servers, to inspect or restart one. */
  readonly servers: readonly RedisServer[]
  /** Stops every node by its PID and removes their directories. */
  stop(): Promise<void>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Starts `masters` `redis-server --cluster-enabled yes` processes on free
 * ports (cluster bus ports chosen free too, via `--cluster-port`), each in
 * its own temp directory, joins them with
 * `redis-cli --cluster create … --cluster-replicas 0 --cluster-yes`, and waits
 * until every node reports `cluster_state:ok`.
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = options.masters ?? 3
  if (masters < 3) throw new Error('redis-cli --cluster create needs at least 3 masters')
  const servers: RedisServer[] = []
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()))
  }
  try {
    for (let i = 0; i < masters; i++) {
      const busPort = await freePort()
      servers.push(
        await startRedisServer({
          extraArgs: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-node-timeout',
            '5000',
            '--cluster-port',
            String(busPort),
          ],
        }),
      )
    }
    const first = servers[0] as RedisServer
    await redisCli(
      first.port,
      [
        '--cluster',
        'create',
        ...servers.map((server) => `127.0.0.1:${server.port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { timeoutMs: 60_000 },
    )
    const deadline = Date.now() + (options.startTimeoutMs ?? 30_000)
    for (const server of servers) {
      for (;;) {
        const info = await redisCli(server.port, ['CLUSTER', 'INFO'])
        if (info.includes('cluster_state:ok')) break
        if (Date.now() > deadline) {
          throw new Error(`cluster node ${server.port} did not reach cluster_state:ok`)
        }
        await sleep(100)
      }
    }
  } catch (error) {
    await stop()
    throw error
  }
  return {
    nodes: servers.map((server) => ({ host: server.host, port: server.port })),
    servers,
    stop,
  }
}
