import { z } from 'zod'
import { jsonByteLength, jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { isValidId } from '../shared/ids.js'

/** What happens when a suspended worker's timeout passes (docs/runtime/workers.md, resume conditions). */
export const TIMEOUT_ACTIONS = ['resume_with_summary', 'fail', 'resume_with_input'] as const

/** Schema of {@link ResumeConditions}; unknown fields are rejected. */
export const resumeConditionsSchema = z.strictObject({
  /** A trigger source that may wake the worker (`github`, `slack`, `cron`, `webhook`...). */
  trigger: z
    .strictObject({
      provider: z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, 'a provider is a lower-case name'),
      /** A registered trigger id, when the trigger is already registered. */
      id: z.string().min(1).max(256).optional(),
      /** Provider-specific settings. */
      config: z.record(z.string(), jsonValueSchema).optional(),
    })
    .optional(),
  /** Wake after this long. */
  timeout: z
    .strictObject({
      durationMinutes: z.int().positive(),
      onTimeout: z.enum(TIMEOUT_ACTIONS).default('resume_with_summary'),
      /** The resume input of `resume_with_input` (required then, refused otherwise); plain JSON. */
      input: jsonValueSchema.optional(),
    })
    .optional(),
  /** An event-log topic whose next event wakes the worker. */
  onEvent: z.string().trim().min(1, 'onEvent must be a non-empty topic name').optional(),
})

/** What may wake a suspended worker; all fields optional (none: parked "open"). */
export type ResumeConditions = z.output<typeof resumeConditionsSchema>
/** Resume conditions as a caller writes them (`onTimeout` may be left out). */
export type ResumeConditionsInput = z.input<typeof resumeConditionsSchema>

/** Largest `timeout.input`, as JSON bytes (it travels in the timeout wake's payload). */
export const MAX_TIMEOUT_INPUT_BYTES = 8 * 1024

/** Longest timeout: 10 years, so a due time always fits a wake id. */
export const MAX_TIMEOUT_MINUTES = 10 * 366 * 24 * 60

/**
 * What the schema cannot say: an `onEvent` topic is a valid topic name, a
 * timeout fits a wake, and `timeout.input` is given exactly for
 * `resume_with_input` and fits its limit. Returns the failing path and why.
 */
function conditionsProblem(conditions: ResumeConditions): [string, string] | null {
  if (conditions.onEvent !== undefined && !isValidId(conditions.onEvent)) {
    return ['onEvent', 'a topic is letters, digits, "_", "." and "-", at most 128']
  }
  const timeout = conditions.timeout
  if (timeout === undefined) return null
  if (timeout.durationMinutes > MAX_TIMEOUT_MINUTES) {
    return ['timeout.durationMinutes', `at most ${MAX_TIMEOUT_MINUTES}`]
  }
  if (timeout.onTimeout === 'resume_with_input') {
    if (timeout.input === undefined) return ['timeout.input', 'resume_with_input needs an input']
    const size = jsonByteLength(timeout.input)
    if (size > MAX_TIMEOUT_INPUT_BYTES) {
      return ['timeout.input', `${size} bytes exceed ${MAX_TIMEOUT_INPUT_BYTES}`]
    }
  } else if (timeout.input !== undefined) {
    return ['timeout.input', 'an input is only used by resume_with_input']
  }
  return null
}

/**
 * Validates resume conditions; `null`/`undefined` give `null`.
 *
 * @throws `INVALID_RESUME_CONDITIONS` with `context.path` naming the failing
 *   field (for example `timeout.durationMinutes`); `UNSUPPORTED_TIMEOUT_ACTION`
 *   for an `onTimeout` outside {@link TIMEOUT_ACTIONS}.
 */
export function parseResumeConditions(input: unknown): ResumeConditions | null {
  if (input === null || input === undefined) return null
  const parsed = resumeConditionsSchema.safeParse(input)
  if (parsed.success) {
    const problem = conditionsProblem(parsed.data)
    if (problem === null) return parsed.data
    const [path, message] = problem
    throw runtimeError(
      'INVALID_RESUME_CONDITIONS',
      `Invalid resume conditions at ${path}: ${message}`,
      { path, issues: [{ path, message }] },
    )
  }
  const issue = parsed.error.issues[0]
  const keys = issue?.code === 'unrecognized_keys' ? issue.keys : []
  const path = [...(issue?.path ?? []), ...keys.slice(0, 1)].join('.')
  // An unsupported timeout action has its own diagnostic (HARN-SUS-008, docs/runtime/errors.md).
  const unsupportedAction = parsed.error.issues.find(
    (i) => i.path.join('.') === 'timeout.onTimeout',
  )
  if (unsupportedAction !== undefined) {
    throw runtimeError(
      'UNSUPPORTED_TIMEOUT_ACTION',
      `Unsupported timeout.onTimeout: expected one of ${TIMEOUT_ACTIONS.join(', ')}`,
      { path: 'timeout.onTimeout', supported: [...TIMEOUT_ACTIONS] },
    )
  }
  throw runtimeError(
    'INVALID_RESUME_CONDITIONS',
    `Invalid resume conditions at ${path || '(root)'}: ${issue?.message ?? 'invalid'}`,
    {
      path,
      issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
    },
  )
}
