import { AgentStateError, type Backend, type BackendUrlOptions } from '@agent-state/core'
import type { SqliteBackendOptions } from './options.js'
import { createSqliteBackend } from './sqlite-backend.js'

/** Options of {@link createBackendFromUrl}: the URL options plus any backend option but `path`. */
export type SqliteUrlOptions = BackendUrlOptions &
  Omit<SqliteBackendOptions, 'path' | 'namespace' | 'clock'>

function invalid(message: string): AgentStateError {
  return new AgentStateError('INVALID_ARGUMENT', message)
}

/**
 * Opens the SQLite backend from a URL: `sqlite:./state.db` (relative to the
 * current directory), `sqlite:/abs/path.db`, `sqlite:///abs/path.db`, or
 * `sqlite::memory:` (tests only: not durable, one process). The path is taken
 * literally (no percent-decoding). Query parameters `synchronous=FULL|NORMAL`
 * and `busyTimeoutMs=N` set those options; explicit `options` win.
 */
export function createBackendFromUrl(url: string, options: SqliteUrlOptions = {}): Backend {
  if (typeof url !== 'string' || !/^sqlite:/i.test(url)) {
    throw invalid('A sqlite backend URL starts with "sqlite:"')
  }
  let rest = url.slice('sqlite:'.length)
  const query = rest.indexOf('?')
  const search = new URLSearchParams(query < 0 ? '' : rest.slice(query + 1))
  if (query >= 0) rest = rest.slice(0, query)
  if (rest.startsWith('//')) {
    // sqlite:///abs/path: an empty authority. Any host is refused: SQLite is local only.
    if (!rest.startsWith('///'))
      throw invalid('A sqlite URL names a local file: sqlite:/abs/path.db or sqlite:./rel.db')
    rest = rest.slice(2)
  }
  if (rest.length === 0) throw invalid('A sqlite URL needs a path, for example sqlite:./state.db')
  const fromQuery: { synchronous?: 'FULL' | 'NORMAL'; busyTimeoutMs?: number } = {}
  for (const [name, value] of search) {
    if (name === 'synchronous') {
      const upper = value.toUpperCase()
      if (upper !== 'FULL' && upper !== 'NORMAL')
        throw invalid('synchronous must be FULL or NORMAL')
      fromQuery.synchronous = upper
    } else if (name === 'busyTimeoutMs') {
      if (!/^\d+$/.test(value))
        throw invalid('busyTimeoutMs must be a whole number of milliseconds')
      fromQuery.busyTimeoutMs = Number(value)
    } else {
      throw invalid(`Unknown sqlite URL parameter ${JSON.stringify(name)}`)
    }
  }
  return createSqliteBackend({ ...fromQuery, ...options, path: rest })
}
