import {
  type Backend,
  type BackendUrlOptions,
  invalidBackendUrl,
  readUrlQuery,
} from '@agent-state/core'
import type { PostgresBackendOptions } from './options.js'
import { openPostgresBackend } from './postgres-backend.js'

/** Options of {@link createBackendFromUrl}: the URL options plus any backend option but the URL. */
export type PostgresUrlOptions = BackendUrlOptions &
  Omit<PostgresBackendOptions, 'connectionString' | 'namespace'>

/** Query parameters that are the backend's own options; removed before the URL goes to `pg`. */
const OWN = {
  schema: 'string',
  poolSize: 'integer',
  statementTimeoutMs: 'integer',
  lockTimeoutMs: 'integer',
  idleInTransactionTimeoutMs: 'integer',
  connectTimeoutMs: 'integer',
  startupTimeouts: 'boolean',
  maxValueBytes: 'integer',
  changeNotification: 'boolean',
} as const

/**
 * Where the `LISTEN` connection goes when the URL's host is a
 * transaction-pooling PgBouncer: the PostgreSQL server itself, reached with
 * the URL's user, password, database and TLS parameters. Host and port only,
 * so that no second set of credentials travels in a query string.
 */
const LISTEN = {
  listenHost: 'string',
  listenPort: 'integer',
} as const

/**
 * libpq parameters passed to `pg` unchanged: TLS (`sslmode` =
 * `disable|prefer|require|verify-ca|verify-full|no-verify`, `sslrootcert`,
 * `sslcert`, `sslkey`: file paths) and a unix-socket `host` directory.
 */
const PASSED = {
  sslmode: 'string',
  sslrootcert: 'string',
  sslcert: 'string',
  sslkey: 'string',
  host: 'string',
  application_name: 'string',
} as const

const SSL_MODES = new Set(['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'])

/**
 * Opens the PostgreSQL backend from a URL:
 * `postgres://user:password@host:5432/database?schema=agent_state&sslmode=verify-full`
 * (`postgresql://` too). Percent-encode the password's special characters.
 * The query holds the backend's own options ({@link OWN}: `schema`,
 * `poolSize`, the timeouts, `startupTimeouts=false` for PgBouncer) and the
 * libpq parameters passed to `pg` ({@link PASSED}); explicit `options` win
 * over the query. Credentials never appear in an error.
 *
 * @throws `INVALID_ARGUMENT` (core's `invalidBackendUrl` shape, the URL
 *   redacted) for another scheme, a URL without host, or an unknown, repeated
 *   or malformed query parameter.
 */
export async function createBackendFromUrl(
  url: string,
  options: PostgresUrlOptions = {},
): Promise<Backend> {
  if (typeof url !== 'string' || !/^postgres(?:ql)?:\/\//i.test(url)) {
    throw invalidBackendUrl(
      'PostgreSQL',
      String(url),
      'a PostgreSQL backend URL starts with "postgres://" or "postgresql://"',
    )
  }
  // The query starts at the first "?" after the last "@": a password may hold "?".
  const at = url.lastIndexOf('@')
  const question = url.indexOf('?', Math.max(at, 0))
  const base = question < 0 ? url : url.slice(0, question)
  const search = new URLSearchParams(question < 0 ? '' : url.slice(question + 1))
  const values = readUrlQuery('PostgreSQL', url, search, { ...OWN, ...PASSED, ...LISTEN })
  const authority = base.replace(/^postgres(?:ql)?:\/\//i, '')
  const hostPart = authority.slice(authority.lastIndexOf('@') + 1).split('/')[0] ?? ''
  if (hostPart === '' && values.host === undefined) {
    throw invalidBackendUrl(
      'PostgreSQL',
      url,
      'a PostgreSQL URL names a host: postgres://host:5432/db',
    )
  }
  if (values.sslmode !== undefined && !SSL_MODES.has(values.sslmode)) {
    throw invalidBackendUrl(
      'PostgreSQL',
      url,
      `query parameter "sslmode" must be one of ${[...SSL_MODES].join(', ')}`,
    )
  }
  const passed = new URLSearchParams()
  for (const name of Object.keys(PASSED) as (keyof typeof PASSED)[]) {
    const value = values[name]
    if (value !== undefined) passed.set(name, value)
  }
  const fromQuery: Partial<PostgresBackendOptions> = {}
  for (const name of Object.keys(OWN) as (keyof typeof OWN)[]) {
    const value = values[name]
    if (value !== undefined) Object.assign(fromQuery, { [name]: value })
  }
  const rest = passed.toString()
  const connectionString = rest === '' ? base : `${base}?${rest}`
  if (values.listenHost !== undefined || values.listenPort !== undefined) {
    fromQuery.listenConnectionString = listenUrl(url, connectionString, values)
  }
  // The lease clock is the database's: a host clock (openBackend's `clock`) does not apply.
  const { clock: _hostClock, ...given } = options
  return openPostgresBackend({ ...fromQuery, ...given, connectionString })
}

/** The pool's URL with host and port replaced by `listenHost` / `listenPort`. */
function listenUrl(
  url: string,
  connectionString: string,
  values: { listenHost?: string | undefined; listenPort?: number | undefined },
): string {
  let parsed: URL
  try {
    parsed = new URL(connectionString)
  } catch {
    throw invalidBackendUrl('PostgreSQL', url, 'listenHost/listenPort need a URL with a host')
  }
  if (values.listenPort !== undefined && (values.listenPort < 1 || values.listenPort > 65535)) {
    throw invalidBackendUrl('PostgreSQL', url, 'query parameter "listenPort" must be 1-65535')
  }
  if (values.listenHost !== undefined) parsed.hostname = values.listenHost
  if (values.listenPort !== undefined) parsed.port = String(values.listenPort)
  return parsed.toString()
}
