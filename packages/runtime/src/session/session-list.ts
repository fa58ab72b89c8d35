import { AgentStateError, type Backend } from '@agent-state/core'
import { SESSIONS_PREFIX } from '../shared/layout.js'

/** Options of {@link listSessions}. */
export interface ListSessionsOptions {
  /** Opaque cursor from the previous page. */
  readonly cursor?: string
  /** Largest number of session ids in the page, 1 to 10 000. Default 100. */
  readonly limit?: number
}

/** One page of session ids. */
export interface SessionPage {
  /** Session ids in ascending UTF-8 byte order. */
  readonly sessions: readonly string[]
  /** Present when more may follow; pass it back as `cursor`. */
  readonly cursor?: string
}

/**
 * One page of the ids of every session in the backend, in ascending byte
 * order. Built on the backend's delimiter listing, so a page costs one
 * `list` call however many keys the sessions hold.
 */
export async function listSessions(
  backend: Backend,
  options: ListSessionsOptions = {},
): Promise<SessionPage> {
  if (typeof options !== 'object' || options === null) {
    throw new AgentStateError('INVALID_ARGUMENT', 'options must be an object')
  }
  const page = await backend.list({
    prefix: SESSIONS_PREFIX,
    delimiter: '/',
    limit: options.limit ?? 100,
    ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
  })
  const sessions = (page.prefixes ?? []).map((group) =>
    group.slice(SESSIONS_PREFIX.length, group.length - 1),
  )
  return page.cursor === undefined ? { sessions } : { sessions, cursor: page.cursor }
}
