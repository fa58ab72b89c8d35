import { AgentStateError, type Backend } from '@agent-state/core'
import {
  closeWorker,
  type EffectResolution,
  quarantineRecord,
  resolveEffect,
} from '@agent-state/runtime'
import { textOfRef } from './ui-data.js'

/**
 * The operator actions of `agent-state ui --allow-actions`, each through the runtime's own
 * audited operation: `resolveEffect`, `closeWorker`, `quarantineRecord`. Each is recorded with
 * the operator named at start: as the lease holder of the attempt or the close
 * (`agent-state-ui:<operator>`, in the run's `attempt_started` and the worker's `worker_closed`
 * audit entries), in the reason of a resolution, and as `by` of a quarantine report.
 */

/** The names of the actions (`POST /api/action/<name>`). */
export const ACTION_NAMES = ['resolve-effect', 'close-worker', 'quarantine'] as const

/** An operator name: 1 to 64 letters, digits, and `.`, `_`, `@`, `-` (it goes into lease holders). */
export function isOperatorName(name: string): boolean {
  return /^[\p{L}\p{N}._@-]{1,64}$/u.test(name)
}

/** The lease holder an action takes its leases as. */
export function operatorHolder(operator: string): string {
  return `agent-state-ui:${operator}`
}

function bad(message: string): AgentStateError {
  return new AgentStateError('INVALID_ARGUMENT', message)
}

function field(body: Record<string, unknown>, name: string): string {
  const value = body[name]
  if (typeof value !== 'string') throw bad(`the action needs "${name}"`)
  return value
}

function reasonOf(body: Record<string, unknown>): string {
  const reason = field(body, 'reason').trim()
  if (reason === '') throw bad('the action needs a reason')
  if (reason.length > 1000) throw bad('the reason is at most 1000 characters')
  return reason
}

function resolutionOf(body: Record<string, unknown>, reason: string): EffectResolution {
  const action = field(body, 'action')
  if (action === 'confirm') {
    let result: unknown
    try {
      result = JSON.parse(field(body, 'result'))
    } catch {
      throw bad('the result of a confirmation is JSON')
    }
    return { action, result: result as never, reason }
  }
  if (action === 'fail') {
    const message = field(body, 'message').trim()
    if (message === '') throw bad('a failure needs a message')
    return { action, message, reason }
  }
  if (action === 'retry') return { action, reason }
  throw bad('the resolution is confirm, fail or retry')
}

/**
 * Runs one action; resolves to one line saying what was done (printed by the server too, as
 * its own audit log). The body is the page's JSON; keys and ids come as refs (base64url).
 */
export async function runAction(
  backend: Backend,
  name: string,
  body: Record<string, unknown>,
  operator: string,
): Promise<string> {
  const holder = operatorHolder(operator)
  if (name === 'resolve-effect') {
    const runId = textOfRef(field(body, 'run'))
    const effectId = textOfRef(field(body, 'effect'))
    const reason = reasonOf(body)
    const resolution = resolutionOf(body, `${reason} (operator ${operator}, agent-state ui)`)
    const record = await resolveEffect(backend, runId, effectId, resolution, { holder })
    return `${operator} resolved effect ${effectId} of run ${runId}: ${resolution.action}, now ${record.state}`
  }
  if (name === 'close-worker') {
    const workerId = textOfRef(field(body, 'worker'))
    await closeWorker(backend, workerId, { holder })
    return `${operator} closed worker ${workerId}`
  }
  if (name === 'quarantine') {
    const key = textOfRef(field(body, 'key'))
    const report = await quarantineRecord(backend, key, { by: operator, reason: reasonOf(body) })
    return `${operator} quarantined ${key}: report at ${report.reportKey}`
  }
  throw bad(`no action ${name}`)
}
