import type { Lease } from './backend.js'
import { AgentStateError } from './errors.js'
import { quoteForMessage } from './keys.js'

/**
 * The two answers every backend gives about `PutOptions.fence` the same way
 * (docs/contract.md, Leases and fencing): one error per case, built here so
 * the message and context never drift between backends.
 */

/**
 * A `put` with a `fence` on a backend that does not claim
 * `capabilities.crossKeyFence`: refused, never written unfenced.
 */
export function fenceUnsupported(backendName: string): AgentStateError {
  return new AgentStateError(
    'UNSUPPORTED',
    `The ${backendName} backend does not claim crossKeyFence: a write fenced by another key's lease is refused, not written unfenced`,
    { context: { backend: backendName } },
  )
}

/**
 * A `put` whose `fence` is not the fence key's current, unexpired lease
 * (released, expired or superseded): `LEASE_LOST`, nothing stored.
 * `currentToken` is the fence key's current token when the backend has it
 * at hand (`null`: none, or not read).
 */
export function fenceLost(
  key: string,
  fence: Lease,
  currentToken: number | null = null,
): AgentStateError {
  return new AgentStateError(
    'LEASE_LOST',
    `The lease on ${quoteForMessage(fence.key)} fencing the write of ${quoteForMessage(key)} is no longer current`,
    { context: { key, fenceKey: fence.key, token: fence.token, currentToken } },
  )
}
