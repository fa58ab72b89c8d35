export { ensureDebianPackages } from './debian-packages.js'
export { freePort } from './free-port.js'
export { type RedisCluster, type RedisClusterOptions, startRedisCluster } from './redis-cluster.js'
export {
  type RedisSentinel,
  type RedisSentinelOptions,
  startRedisSentinel,
} from './redis-sentinel.js'
export {
  ensureRedisInstalled,
  type RedisServer,
  type RedisServerOptions,
  type RestartOptions,
  redisCli,
  startRedisServer,
  waitForPing,
} from './redis-server.js'
export { type RgwOptions, type RgwServer, startRgw } from './rgw.js'
export { startTcpProxy, type TcpProxy, type TcpProxyOptions } from './tcp-proxy.js'
