import { CronExpressionParser } from 'cron-parser'
import { z } from 'zod'
import type { JsonValue } from '../shared/canonical-json.js'
import { wakeError } from '../shared/errors.js'

/**
 * The `cron` trigger provider (docs/runtime/wakes.md, Triggers): a resume
 * condition `{ provider: 'cron', config: { schedule, timeZone } }` wakes the
 * worker at the schedule's next occurrence after the suspension. The
 * expression is parsed by `cron-parser` (a maintained parser with time-zone
 * support through Luxon, already in the workspace through BullMQ), not by
 * hand: cron's field ranges, aliases, steps and daylight-saving gaps are
 * where hand-written parsers go wrong.
 */

/** A cron trigger's configuration: both fields required, so the time zone is never implicit. */
export const cronTriggerConfigSchema = z.strictObject({
  /** A 5-field (or 6-field, with seconds) cron expression, e.g. `0 3 * * *`. */
  schedule: z.string().trim().min(1).max(256),
  /** An IANA time zone the schedule is read in, e.g. `Europe/Paris` or `UTC`. */
  timeZone: z.string().min(1).max(64),
})
/** See {@link cronTriggerConfigSchema}. */
export type CronTriggerConfig = z.infer<typeof cronTriggerConfigSchema>

/** What a provider registers: a `schedule` wake's due time and payload fields. */
export interface TriggerOccurrence {
  readonly dueAt: number
  readonly payload: Record<string, JsonValue>
}

function invalid(message: string, path: string, cause?: unknown) {
  return wakeError('INVALID_WAKE', `Invalid cron trigger: ${message}`, { path }, cause)
}

/**
 * The first occurrence of a cron trigger strictly after `now`.
 *
 * @throws `INVALID_WAKE` (`context.path`: `trigger.config`, `.schedule` or
 *   `.timeZone`) for a config that is not `{ schedule, timeZone }`, an unknown
 *   time zone or an invalid expression; the suspend reports it as
 *   `TRIGGER_REGISTRATION_FAILED`.
 */
export function nextCronOccurrence(config: unknown, now: number): TriggerOccurrence {
  const parsed = cronTriggerConfigSchema.safeParse(config ?? {})
  if (!parsed.success) {
    const path = ['trigger.config', ...(parsed.error.issues[0]?.path ?? [])].join('.')
    throw invalid(parsed.error.issues[0]?.message ?? 'bad config', path, parsed.error)
  }
  const { schedule, timeZone } = parsed.data
  try {
    // Throws a RangeError for a zone the runtime's ICU does not know.
    new Intl.DateTimeFormat('en-US', { timeZone })
  } catch (cause) {
    throw invalid(`unknown time zone ${timeZone}`, 'trigger.config.timeZone', cause)
  }
  let dueAt: number
  try {
    const expression = CronExpressionParser.parse(schedule, {
      tz: timeZone,
      currentDate: new Date(now),
    })
    dueAt = expression.next().getTime()
  } catch (cause) {
    throw invalid(
      `the schedule is not a cron expression (${String((cause as Error)?.message ?? cause).slice(0, 200)})`,
      'trigger.config.schedule',
      cause,
    )
  }
  return { dueAt, payload: { provider: 'cron', schedule, timeZone } }
}
