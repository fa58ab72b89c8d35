import { fileURLToPath } from 'node:url'
import { AgentStateError, type Backend, type BackendUrlOptions } from '@agent-state/core'
import { createFsBackend } from './fs-backend.js'
import type { FsBackendOptions } from './options.js'

function invalidUrl(url: string, problem: string): AgentStateError {
  return new AgentStateError(
    'INVALID_ARGUMENT',
    `Invalid file URL ${JSON.stringify(url)}: ${problem}`,
    {
      context: { url },
    },
  )
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
  if (rest.includes('?') || rest.includes('#')) {
    throw invalidUrl(url, 'queries and fragments are not supported; pass options instead')
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
