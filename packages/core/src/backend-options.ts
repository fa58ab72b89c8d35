import type { z } from 'zod'
import { AgentStateError } from './errors.js'
import { redactUrl } from './open-backend.js'

/**
 * The one way every backend package turns bad options or a bad URL into an
 * error, so a caller sees the same `INVALID_ARGUMENT` shape whichever backend
 * it configured: the message names the backend and the first bad field, and
 * `context` is `{ backend, field, issues }` (plus `url`, redacted, for URLs).
 * Values are never echoed: an option may be a credential.
 */

/** One problem with a backend's options, as reported in `context.issues`. */
export interface BackendOptionIssue {
  /** Dotted path of the bad field (`"replication.replicas"`), or `"options"` for the object itself. */
  readonly field: string
  /** What is wrong, without the value. */
  readonly message: string
}

/**
 * Validates `input` against a backend's zod option schema and returns the
 * parsed options (defaults applied).
 *
 * @param backend the backend's short name for messages, e.g. `"fs"`, `"S3"`.
 * @throws `INVALID_ARGUMENT` with `context: { backend, field, issues }`.
 */
export function parseBackendOptions<Schema extends z.ZodType>(
  schema: Schema,
  input: unknown,
  backend: string,
): z.output<Schema> {
  return parseOptions(schema, input, `${backend} backend`, { backend })
}

/**
 * The same for any other options object of the packages built on a backend
 * (a Keyv store, a LangGraph saver): message `Invalid <subject> option
 * <field>: <problem>`, `context: { field, issues, ...extraContext }`.
 */
export function parseOptions<Schema extends z.ZodType>(
  schema: Schema,
  input: unknown,
  subject: string,
  extraContext: Readonly<Record<string, unknown>> = {},
): z.output<Schema> {
  const parsed = schema.safeParse(input)
  if (parsed.success) return parsed.data
  const issues: BackendOptionIssue[] = parsed.error.issues.map((issue) => ({
    field: issue.path.map(String).join('.') || 'options',
    message: issue.message,
  }))
  const first = issues[0] ?? { field: 'options', message: 'invalid' }
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''
  throw new AgentStateError(
    'INVALID_ARGUMENT',
    `Invalid ${subject} option ${first.field}: ${first.message}${more}`,
    { context: { ...extraContext, field: first.field, issues } },
  )
}

/**
 * The error for a backend URL that cannot be used: the URL appears only
 * through {@link redactUrl}, so a password in it never reaches a message.
 */
export function invalidBackendUrl(backend: string, url: string, problem: string): AgentStateError {
  const shown = redactUrl(url)
  return new AgentStateError(
    'INVALID_ARGUMENT',
    `Invalid ${backend} backend URL ${JSON.stringify(shown)}: ${problem}`,
    {
      context: { backend, field: 'url', url: shown, issues: [{ field: 'url', message: problem }] },
    },
  )
}

/** How one URL query parameter is read: as text, a non-negative integer, or `true`/`false`. */
export type UrlQueryParameterKind = 'string' | 'integer' | 'boolean'

/** The parsed query parameters named by a {@link readUrlQuery} spec; absent ones are left out. */
export type UrlQueryValues<Spec extends Record<string, UrlQueryParameterKind>> = {
  -readonly [Name in keyof Spec]?: Spec[Name] extends 'integer'
    ? number
    : Spec[Name] extends 'boolean'
      ? boolean
      : string
}

/**
 * Reads a backend URL's query parameters by a spec, in one place for every
 * backend: an unknown, repeated or malformed parameter is `INVALID_ARGUMENT`
 * (via {@link invalidBackendUrl}); the values themselves are never echoed.
 */
export function readUrlQuery<const Spec extends Record<string, UrlQueryParameterKind>>(
  backend: string,
  url: string,
  query: URLSearchParams,
  spec: Spec,
): UrlQueryValues<Spec> {
  const values: Record<string, string | number | boolean> = {}
  const seen = new Set<string>()
  for (const [name, text] of query) {
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined
    if (kind === undefined) {
      const known = Object.keys(spec)
      throw invalidBackendUrl(
        backend,
        url,
        `unknown query parameter ${JSON.stringify(name)}${known.length > 0 ? ` (known: ${known.join(', ')})` : ''}`,
      )
    }
    if (seen.has(name)) {
      throw invalidBackendUrl(backend, url, `query parameter ${JSON.stringify(name)} is repeated`)
    }
    seen.add(name)
    if (kind === 'integer') {
      if (!/^\d{1,15}$/.test(text)) {
        throw invalidBackendUrl(
          backend,
          url,
          `query parameter ${JSON.stringify(name)} must be a non-negative integer`,
        )
      }
      values[name] = Number(text)
    } else if (kind === 'boolean') {
      if (text !== 'true' && text !== 'false') {
        throw invalidBackendUrl(
          backend,
          url,
          `query parameter ${JSON.stringify(name)} must be true or false`,
        )
      }
      values[name] = text === 'true'
    } else {
      values[name] = text
    }
  }
  return values as UrlQueryValues<Spec>
}
