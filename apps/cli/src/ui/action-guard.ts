import { tokenMatches } from './access-token.js'

/** The header a page sends its action token in (a header no cross-site form can set). */
export const ACTION_TOKEN_HEADER = 'x-agent-state-action-token'

/** What the guard looks at in an action request (its method and headers, as Node gives them). */
export interface ActionRequestHeaders {
  readonly method: string
  readonly origin: string | undefined
  readonly secFetchSite: string | undefined
  readonly contentType: string | undefined
  readonly actionToken: string | undefined
}

/** What the guard compares an action request with. */
export interface ActionGuardContext {
  /** Whether the server was started with `--allow-actions`. */
  readonly enabled: boolean
  /** The origin the page runs at (`http://<Host>`, the Host already checked). */
  readonly origin: string
  /** The action token this server handed its own page (see `/api/backend`). */
  readonly actionToken: string
}

/** Why an action request is refused: the HTTP status and a message. */
export interface ActionRefusal {
  readonly status: number
  readonly message: string
}

/**
 * Whether an operator action may run, checked after the access token (the cookie): actions
 * must be on; the request is a POST; it names this server's origin (required here, where a
 * read only refuses a foreign one) and, when the browser says, comes from the same origin;
 * its body is JSON (which no cross-site form can send without a preflight); and it carries the
 * action token, which only this server's own page can read (from `/api/backend`, behind the
 * cookie and the same-origin policy). Any one of these stops a cross-site request on its own.
 * `null`: allowed.
 */
export function actionRefusal(
  request: ActionRequestHeaders,
  context: ActionGuardContext,
): ActionRefusal | null {
  if (!context.enabled) {
    return {
      status: 403,
      message: 'actions are off: start agent-state ui with --allow-actions --operator <name>',
    }
  }
  if (request.method !== 'POST') return { status: 405, message: 'an action is a POST' }
  if (request.origin !== context.origin) {
    return { status: 403, message: 'an action must come from this server’s own page (Origin)' }
  }
  if (request.secFetchSite !== undefined && request.secFetchSite !== 'same-origin') {
    return { status: 403, message: 'an action must come from this server’s own page' }
  }
  const type = (request.contentType ?? '').split(';')[0]?.trim().toLowerCase()
  if (type !== 'application/json') {
    return { status: 415, message: 'an action’s body is application/json' }
  }
  if (
    request.actionToken === undefined ||
    !tokenMatches(context.actionToken, request.actionToken)
  ) {
    return { status: 403, message: 'the action token is missing or wrong: reload the page' }
  }
  return null
}
