import {
  type Backend,
  type BackendUrlOptions,
  invalidBackendUrl,
  readUrlQuery,
} from '@agent-state/core'
import type { SqliteBackendOptions } from './options.js'
import { createSqliteBackend } from './sqlite-backend.js'

/** Options of {@link createBackendFromUrl}: the URL options plus any backend option but `path`. */
export type SqliteUrlOptions = BackendUrlOptions &
  Omit<SqliteBackendOptions, 'path' | 'namespace' | 'clock'>

/**
 * Opens the SQLite backend from a URL: `sqlite:./state.db` (relative to the
 * current directory), `sqlite:/abs/path.db`, `sqlite:///abs/path.db`, or
 * `sqlite::memory:` (tests only: not durable, one process). The path is taken
 * literally (no percent-decoding). Query parameters `synchronous=FULL|NORMAL`
 * (any case) and `busyTimeoutMs=N` set those options; explicit `options` win.
 *
 * @throws `INVALID_ARGUMENT` (core's `invalidBackendUrl` shape) for a URL that
 *   is not `sqlite:`, names a host, has no path, or has an unknown, repeated
 *   or malformed query parameter.
 */
export function createBackendFromUrl(url: string, options: SqliteUrlOptions = {}): Backend {
  if (typeof url !== 'string' || !/^sqlite:/i.test(url)) {
    throw invalidBackendUrl('SQLite', String(url), 'a SQLite backend URL starts with "sqlite:"')
  }
  let rest = url.slice('sqlite:'.length)
  const query = rest.indexOf('?')
  const search = new URLSearchParams(query < 0 ? '' : rest.slice(query + 1))
  if (query >= 0) rest = rest.slice(0, query)
  if (rest.startsWith('//')) {
    // sqlite:///abs/path: an empty authority. Any host is refused: SQLite is local only.
    if (!rest.startsWith('///')) {
      throw invalidBackendUrl(
        'SQLite',
        url,
        'a SQLite URL names a local file: sqlite:/abs/path.db or sqlite:./rel.db',
      )
    }
    rest = rest.slice(2)
  }
  if (rest.length === 0) {
    throw invalidBackendUrl(
      'SQLite',
      url,
      'a SQLite URL needs a path, for example sqlite:./state.db',
    )
  }
  const values = readUrlQuery('SQLite', url, search, {
    synchronous: 'string',
    busyTimeoutMs: 'integer',
  })
  const fromQuery: { synchronous?: 'FULL' | 'NORMAL'; busyTimeoutMs?: number } = {}
  if (values.synchronous !== undefined) {
    const upper = values.synchronous.toUpperCase()
    if (upper !== 'FULL' && upper !== 'NORMAL') {
      throw invalidBackendUrl('SQLite', url, 'query parameter "synchronous" must be FULL or NORMAL')
    }
    fromQuery.synchronous = upper
  }
  if (values.busyTimeoutMs !== undefined) fromQuery.busyTimeoutMs = values.busyTimeoutMs
  return createSqliteBackend({ ...fromQuery, ...options, path: rest })
}
