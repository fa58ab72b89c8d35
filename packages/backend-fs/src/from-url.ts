import { fileURLToPath } from 'node:url'
import {
  type AgentStateError,
  type Backend,
  type BackendUrlOptions,
  invalidBackendUrl,
  readUrlQuery,
} from '@agent-state/core'
import { createFsBackend } from './fs-backend.js'
import type { FsBackendOptions } from './options.js'

function invalidUrl(url: string, problem: string): AgentStateError {
  return invalidBackendUrl('fs', url, problem)
}

/**
 * The directory a `file:` URL names. `file:./dir`, `file:dir` and `file:../dir`
 * are relative to the current working directory, taken literally;
 * `file:/abs/dir` and `file:///abs/dir` (percent-decoded) are absolute;
 * `file://localhost/abs/dir` too. Other hosts, queries and fragments are
 * rejected: pass options instead.
 */
export function rootFromFileUrl(url: string): string {
  if (!/^file:/i.test(url)) throw invalidUrl(url, 'it must start with "file:"')
  const rest = url.slice('file:'.length)
  if (rest.includes('#')) throw invalidUrl(url, 'fragments are not supported')
  const query = rest.indexOf('?')
  if (query !== -1) {
    // No query parameter is defined (pass options instead): core rejects each one the same way as every backend.
    readUrlQuery('fs', url, new URLSearchParams(rest.slice(query + 1)), {})
    throw invalidUrl(url, 'queries are not supported; pass options instead')
  }
  if (rest.startsWith('//')) {
    let path: string
    try {
      path = fileURLToPath(`file:${rest.replace(/^\/\/localhost\//i, '///')}`)
    } catch (cause) {
      throw invalidUrl(url, `not a local file URL (${String((cause as Error).message)})`)
    }
    return path
  }
  if (rest.length === 0) throw invalidUrl(url, 'it names no directory')
  return rest
}

/**
 * Opens the fs backend from a `file:` URL, for `openBackend`:
 * `openBackend('file:./.agent-state')` stores under `./.agent-state` relative
 * to the current working directory. `options` may also carry the fs options
 * other than `root` (`fsync`, `lockTimeoutMs`...).
 */
export function createBackendFromUrl(
  url: string,
  options: BackendUrlOptions & Omit<FsBackendOptions, 'root'> = {},
): Backend {
  if (typeof url !== 'string') throw invalidUrl(String(url), 'it must be a string')
  return createFsBackend({ ...options, root: rootFromFileUrl(url) })
}
