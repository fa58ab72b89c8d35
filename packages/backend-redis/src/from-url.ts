import {
  type Backend,
  type BackendUrlOptions,
  invalidBackendUrl,
  readUrlQuery,
} from '@agent-state/core'
import type { RedisBackendOptions } from './options.js'
import { openRedisBackend } from './redis-backend.js'

const BACKEND = 'Redis'
const DEFAULT_SENTINEL_PORT = 26379

/** Query parameters of every Redis URL form. */
const COMMON_QUERY = {
  keyPrefix: 'string',
  connectTimeoutMs: 'integer',
  commandTimeoutMs: 'integer',
} as const
/** `redis:`/`rediss:` add the Cluster parameters. */
const SERVER_QUERY = { ...COMMON_QUERY, cluster: 'string', nodes: 'string' } as const

type MutableOptions = { -readonly [K in keyof RedisBackendOptions]: RedisBackendOptions[K] }

function parsePort(url: string, text: string): number {
  const port = Number(text)
  if (!/^\d{1,5}$/.test(text) || port < 1 || port > 65_535)
    throw invalidBackendUrl(BACKEND, url, `bad port ${JSON.stringify(text)}`)
  return port
}

/** `host[:port]` of a node list; IPv6 hosts in brackets. */
function parseNode(url: string, item: string, defaultPort: number | undefined) {
  const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(item)
  const at = bracketed === null ? item.lastIndexOf(':') : -1
  const host = bracketed !== null ? bracketed[1] : at < 0 ? item : item.slice(0, at)
  const portText = bracketed !== null ? bracketed[2] : at < 0 ? undefined : item.slice(at + 1)
  if (host === undefined || host === '' || (portText === undefined && defaultPort === undefined)) {
    throw invalidBackendUrl(BACKEND, url, `bad node ${JSON.stringify(item)}: expected host:port`)
  }
  return {
    host,
    port: portText === undefined ? (defaultPort as number) : parsePort(url, portText),
  }
}

function credentials(url: string, parsed: URL, options: MutableOptions): void {
  try {
    if (parsed.username !== '') options.username = decodeURIComponent(parsed.username)
    if (parsed.password !== '') options.password = decodeURIComponent(parsed.password)
  } catch {
    throw invalidBackendUrl(BACKEND, url, 'bad percent-encoding in the credentials')
  }
}

function applyCommon(
  options: MutableOptions,
  values: { keyPrefix?: string; connectTimeoutMs?: number; commandTimeoutMs?: number },
): void {
  if (values.keyPrefix !== undefined) options.keyPrefix = values.keyPrefix
  if (values.connectTimeoutMs !== undefined) options.connectTimeoutMs = values.connectTimeoutMs
  if (values.commandTimeoutMs !== undefined) options.commandTimeoutMs = values.commandTimeoutMs
}

function parseDb(url: string, text: string): number {
  if (!/^\d{1,7}$/.test(text))
    throw invalidBackendUrl(BACKEND, url, 'the path must be a database number')
  return Number(text)
}

/**
 * `redis+sentinel://[user[:password]@]s1[:port][,s2[:port]…]/<master name>[/db][?query]`:
 * the Sentinels (default port 26379), the master group and the database.
 * The credentials are the primary's; Sentinels that need their own password
 * take the `sentinel.password` option (not in the URL).
 */
function parseSentinelUrl(url: string): RedisBackendOptions {
  const match = /^redis\+sentinel:\/\/([^/?#]*)([^#]*)$/i.exec(url)
  if (match === null) throw invalidBackendUrl(BACKEND, url, 'not a redis+sentinel URL')
  const authority = match[1] as string
  const at = authority.lastIndexOf('@')
  const hosts = authority.slice(at + 1)
  // Only the single-host part is left to the URL parser: userinfo, path, query.
  let parsed: URL
  try {
    parsed = new URL(`redis://${authority.slice(0, at + 1)}sentinel${match[2]}`)
  } catch {
    throw invalidBackendUrl(BACKEND, url, 'not a URL')
  }
  const options: MutableOptions = {}
  credentials(url, parsed, options)
  const nodes = hosts.split(',').map((item) => parseNode(url, item, DEFAULT_SENTINEL_PORT))
  const path = parsed.pathname.split('/').slice(1)
  const name = path[0] === undefined ? '' : decodeURIComponent(path[0])
  if (name === '' || path.length > 2) {
    throw invalidBackendUrl(BACKEND, url, 'the path must be /<master name>[/<db>]')
  }
  if (path[1] !== undefined && path[1] !== '') options.db = parseDb(url, path[1])
  options.sentinel = { nodes, name }
  applyCommon(options, readUrlQuery(BACKEND, url, parsed.searchParams, COMMON_QUERY))
  return options
}

/**
 * Parses a Redis URL into backend options:
 * - `redis[s]://[user[:password]@]host[:port][/db][?cluster=1&nodes=h2:p2,h3:p3]`:
 *   `cluster=1` treats the host (plus any `nodes`) as Cluster seed nodes; a
 *   db other than 0 is then refused;
 * - `redis+sentinel://[user[:password]@]s1[:p1][,s2[:p2]…]/<master>[/db]`.
 * User and password are percent-decoded. Other query parameters:
 * `keyPrefix`, `connectTimeoutMs`, `commandTimeoutMs`. Errors show the URL
 * with its credentials redacted.
 */
export function parseRedisUrl(url: string): RedisBackendOptions {
  if (/^redis\+sentinel:/i.test(url)) return parseSentinelUrl(url)
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw invalidBackendUrl(BACKEND, url, 'not a URL')
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw invalidBackendUrl(BACKEND, url, 'the scheme must be redis:, rediss: or redis+sentinel:')
  }
  if (parsed.hash !== '') throw invalidBackendUrl(BACKEND, url, 'a fragment is not allowed')
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1'
  const port = parsed.port === '' ? 6379 : parsePort(url, parsed.port)
  const options: MutableOptions = { host, port }
  if (parsed.protocol === 'rediss:') options.tls = true
  credentials(url, parsed, options)
  const path = parsed.pathname.replace(/^\//, '')
  if (path !== '') options.db = parseDb(url, path)
  const query = readUrlQuery(BACKEND, url, parsed.searchParams, SERVER_QUERY)
  const { cluster } = query
  if (cluster !== undefined && !['0', '1', 'true', 'false'].includes(cluster)) {
    throw invalidBackendUrl(BACKEND, url, 'cluster must be 1 or 0')
  }
  if (cluster === '1' || cluster === 'true') {
    if ((options.db ?? 0) !== 0) {
      throw invalidBackendUrl(BACKEND, url, 'Redis Cluster has only database 0')
    }
    const seeds = query.nodes === undefined || query.nodes === '' ? [] : query.nodes.split(',')
    options.cluster = {
      nodes: [{ host, port }, ...seeds.map((item) => parseNode(url, item, undefined))],
    }
  } else if (query.nodes !== undefined) {
    throw invalidBackendUrl(BACKEND, url, 'nodes needs cluster=1')
  }
  applyCommon(options, query)
  return options
}

/**
 * Opens the Redis backend from a URL for `openBackend`; see
 * {@link parseRedisUrl} for the forms. `options.namespace` picks the
 * namespace; `options.clock` is ignored (leases use the server's clock).
 * It connects and probes the server (`openRedisBackend`), so the `durable`
 * capability a URL user sees reflects the server's persistence instead of
 * the unprobed default (`false`), and an unreachable server fails here.
 * Invalid URLs and options are refused before connecting.
 */
export async function createBackendFromUrl(
  url: string,
  options: BackendUrlOptions = {},
): Promise<Backend> {
  const fromUrl = parseRedisUrl(url)
  return openRedisBackend(
    options.namespace === undefined ? fromUrl : { ...fromUrl, namespace: options.namespace },
  )
}
