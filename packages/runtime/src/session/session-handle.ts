import { z } from 'zod'
import { HANDOFF_KEY } from './handoff.js'

/**
 * The stable, serializable description of a session handle (docs/runtime/sessions.md):
 * which backend, where (without credentials), which
 * session, the handoff key, the policy in force and the writer. The fields
 * are stable on purpose, so other tools can build on them.
 */
export const stateHandleSchema = z.strictObject({
  _type: z.literal('state_handle'),
  /** The backend's name (`fs`, `sqlite`, `redis`, `s3`, `memory`...). */
  backend: z.string(),
  /** The root path or URL the caller gave as `location`, credentials removed; `null` when none. */
  root: z.string().nullable(),
  sessionId: z.string(),
  /** The reserved name of the handoff document, {@link handoffKeyName}. */
  handoffKey: z.literal(HANDOFF_KEY),
  conflictPolicy: z.enum(['ignore', 'warn', 'error']),
  writer: z.strictObject({
    writerId: z.string(),
    stageId: z.string(),
    sessionId: z.string(),
    workerId: z.string(),
  }),
})

/** See {@link stateHandleSchema}. */
export type StateHandle = z.infer<typeof stateHandleSchema>

/** The reserved name the handoff document is stored under (docs/runtime/sessions.md). */
export function handoffKeyName(): typeof HANDOFF_KEY {
  return HANDOFF_KEY
}

const SECRET_PARAM = /pass|secret|token|key|credential|auth|signature/i

/**
 * `location` without credentials: a URL loses its user info and the values
 * of query parameters whose names suggest a secret; a path is kept as is.
 */
export function redactLocation(location: string): string {
  let url: URL
  try {
    url = new URL(location)
  } catch {
    return location
  }
  // `C:\x` parses as a URL with protocol `c:`; only treat real schemes as URLs.
  if (url.protocol.length <= 2) return location
  if (url.username !== '' || url.password !== '') {
    url.username = ''
    url.password = ''
  }
  for (const name of [...url.searchParams.keys()]) {
    if (SECRET_PARAM.test(name)) url.searchParams.set(name, 'redacted')
  }
  return url.toString()
}
