import { AgentStateError, type Backend, type BackendUrlOptions, redactUrl } from '@agent-state/core'
import type { RedisBackendOptions } from './options.js'
import { openRedisBackend } from './redis-backend.js'

const QUERY_KEYS = new Set([
  'cluster',
  'nodes',
  'keyPrefix',
  'connectTimeoutMs',
  'commandTimeoutMs',
])

function invalid(url: string, problem: string): AgentStateError {
  const shown = redactUrl(url)
  return new AgentStateError(
    'INVALID_ARGUMENT',
    `Invalid redis URL ${JSON.stringify(shown)}: ${problem}`,
    {
      context: { url: shown },
    },
  )
}

function parsePort(url: string, text: string): number {
  const port = Number(text)
  if (!Number.isInteger(port) || port < 1 || port > 65_535)
    throw invalid(url, `bad port ${JSON.stringify(text)}`)
  return port
}

function parseMs(url: string, name: string, text: string): number {
  const ms = Number(text)
  if (!Number.isInteger(ms) || ms < 1) throw invalid(url, `${name} must be a positive integer`)
  return ms
}

/**
 * Parses a `redis://` or `rediss://` URL into backend options:
 * `redis[s]://[user[:password]@]host[:port][/db][?cluster=1&nodes=h2:p2,h3:p3]`.
 * User and password are percent-decoded. `cluster=1` treats the host (plus
 * any `nodes`) as Cluster seed nodes; a db other than 0 is then refused.
 * Other query parameters: `keyPrefix`, `connectTimeoutMs`, `commandTimeoutMs`.
 * Errors never include the password.
 */
export function parseRedisUrl(url: string): RedisBackendOptions {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw invalid(url, 'not a URL')
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw invalid(url, 'the scheme must be redis: or rediss:')
  }
  if (parsed.hash !== '') throw invalid(url, 'a fragment is not allowed')
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1'
  const port = parsed.port === '' ? 6379 : parsePort(url, parsed.port)
  const options: {
    -readonly [K in keyof RedisBackendOptions]: RedisBackendOptions[K]
  } = { host, port }
  if (parsed.protocol === 'rediss:') options.tls = true
  try {
    if (parsed.username !== '') options.username = decodeURIComponent(parsed.username)
    if (parsed.password !== '') options.password = decodeURIComponent(parsed.password)
  } catch {
    throw invalid(url, 'bad percent-encoding in the credentials')
  }
  const path = parsed.pathname.replace(/^\//, '')
  if (path !== '') {
    if (!/^\d{1,7}$/.test(path)) throw invalid(url, 'the path must be a database number')
    options.db = Number(path)
  }
  for (const name of parsed.searchParams.keys()) {
    if (!QUERY_KEYS.has(name)) throw invalid(url, `unknown query parameter ${JSON.stringify(name)}`)
  }
  const query = parsed.searchParams
  const cluster = query.get('cluster')
  if (
    cluster !== null &&
    cluster !== '0' &&
    cluster !== '1' &&
    cluster !== 'true' &&
    cluster !== 'false'
  ) {
    throw invalid(url, 'cluster must be 1 or 0')
  }
  const nodesText = query.get('nodes')
  if (cluster === '1' || cluster === 'true') {
    if ((options.db ?? 0) !== 0) throw invalid(url, 'Redis Cluster has only database 0')
    const nodes = [{ host, port }]
    for (const item of nodesText === null || nodesText === '' ? [] : nodesText.split(',')) {
      const at = item.lastIndexOf(':')
      if (at <= 0) throw invalid(url, `bad node ${JSON.stringify(item)}: expected host:port`)
      nodes.push({
        host: item.slice(0, at).replace(/^\[(.*)\]$/, '$1'),
        port: parsePort(url, item.slice(at + 1)),
      })
    }
    options.cluster = { nodes }
  } else if (nodesText !== null) {
    throw invalid(url, 'nodes needs cluster=1')
  }
  const keyPrefix = query.get('keyPrefix')
  if (keyPrefix !== null) options.keyPrefix = keyPrefix
  const connectTimeout = query.get('connectTimeoutMs')
  if (connectTimeout !== null)
    options.connectTimeoutMs = parseMs(url, 'connectTimeoutMs', connectTimeout)
  const commandTimeout = query.get('commandTimeoutMs')
  if (commandTimeout !== null)
    options.commandTimeoutMs = parseMs(url, 'commandTimeoutMs', commandTimeout)
  return options
}

/**
 * Opens the Redis backend from a URL for `openBackend`; see
 * {@link parseRedisUrl} for the format. `options.namespace` picks the
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
