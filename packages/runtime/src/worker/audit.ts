import { z } from 'zod'
import { jsonValueSchema } from '../shared/canonical-json.js'

/** The lifecycle decisions the audit trail records. */
export const AUDIT_EVENTS = [
  'worker_started',
  'worker_suspended',
  'pre_suspend_denied',
  'worker_resumed',
  'worker_recovered',
  'lease_retaken',
  'pre_resume_denied',
  'worker_completed',
  'worker_closed',
  'resume_by_dispatched',
  'resume_by_declined',
  /** The suspension's other wakes cancelled because it ended (resumed, closed, timed out). */
  'wakes_cancelled',
  /** A timeout with `onTimeout: 'fail'` fired: the worker is closed. */
  'timed_out',
  /** One of the worker's wakes was given up after its handler kept failing (docs/runtime/wakes.md); the worker is unchanged. */
  'wake_failed',
  /** The worker opened its run (`worker.openRun`: `runId`, `attemptId`). */
  'run_opened',
  /** The worker's run was reopened under the resumed owner's lease (`runId`, `attemptId`). */
  'run_reopened',
  /** The worker's run was not reopened on resume: it is completed (`runId`). */
  'run_not_reopened',
] as const

/** One audit entry; stored inside the worker snapshot, so it is as durable and verified as the state. */
export const auditEntrySchema = z.strictObject({
  event: z.enum(AUDIT_EVENTS),
  /** RFC 3339. */
  at: z.iso.datetime(),
  /** The lease holder that made the decision. */
  holder: z.string(),
  /** Its fencing token, when it held the lease. */
  token: z.int().positive().nullable(),
  /** Log-safe details (reasons, flags); never transcript text or resume input. */
  detail: z.record(z.string(), jsonValueSchema),
})

/** One audit entry; see {@link auditEntrySchema}. */
export type AuditEntry = z.infer<typeof auditEntrySchema>

/** How many entries a snapshot keeps; older ones are dropped first. */
export const MAX_AUDIT_ENTRIES = 256

/** `trail` plus `entry`, keeping the newest {@link MAX_AUDIT_ENTRIES}. */
export function appendAudit(trail: readonly AuditEntry[], entry: AuditEntry): AuditEntry[] {
  const next = [...trail, entry]
  return next.length > MAX_AUDIT_ENTRIES ? next.slice(next.length - MAX_AUDIT_ENTRIES) : next
}
