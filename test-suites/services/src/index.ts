export { ensureDebianPackages } from './debian-packages.js'
export { freePort } from './free-port.js'
export { type PgBouncer, type PgBouncerOptions, startPgBouncer } from './pgbouncer.js'
export {
  ensurePostgresInstalled,
  POSTGRES_BIN,
  POSTGRES_SUPERUSER,
  type PostgresRestartOptions,
  type PostgresServer,
  type PostgresServerOptions,
  SERVICE_USER,
  startPostgresServer,
} from './postgres-server.js'
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
export { type DelayMode, startTcpProxy, type TcpProxy, type TcpProxyOptions } from './tcp-proxy.js'
