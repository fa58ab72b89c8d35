import { isAgentStateError } from '@agent-state/core'
import type { DaemonQueue, Delivery, DeliveryOptions } from '../src/index.js'

/**
 * Claims until a delivery comes back: after a delivery expired, an
 * `observer`-clock backend (S3) lets a contender take over only once it has
 * itself watched the old lease for its TTL, so the first claims may still
 * see `DELIVERY_IN_FLIGHT`.
 */
export async function claimEventually(
  queue: DaemonQueue,
  options: DeliveryOptions,
  timeoutMs = 20_000,
): Promise<Delivery> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      const delivery = await queue.claim(options)
      if (delivery !== null) return delivery
    } catch (error) {
      if (!isAgentStateError(error, 'DELIVERY_IN_FLIGHT')) throw error
    }
    if (Date.now() > deadline) throw new Error(`no delivery within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Sleeps `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
