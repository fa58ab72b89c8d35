import { z } from 'zod'
import { jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'

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
    })
    .optional(),
  /** An event-log topic whose next event wakes the worker. */
  onEvent: z.string().trim().min(1, 'onEvent must be a non-empty topic name').optional(),
})

/** What may wake a suspended worker; all fields optional (none: parked "open"). */
export type ResumeConditions = z.output<typeof resumeConditionsSchema>
/** Resume conditions as a caller writes them (`onTimeout` may be left out). */
export type ResumeConditionsInput = z.input<typeof resumeConditionsSchema>

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
  if (parsed.success) return parsed.data
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
