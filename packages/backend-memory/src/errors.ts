import { AgentStateError } from '@agent-state/core'

/**
 * The errors the memory backend builds itself (everything else comes from
 * core's contract rules). It has no client whose errors need mapping.
 */

/** Every call on a closed memory backend. */
export function closedError(): AgentStateError {
  return new AgentStateError('CLOSED', 'The memory backend is closed')
}
