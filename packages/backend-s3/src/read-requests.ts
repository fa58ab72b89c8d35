import { classify } from './errors.js'
import { withinDeadline } from './request-deadline.js'

/** How idempotent requests (reads, listings, bucket checks) are run. */
export interface ReadPolicy {
  /** Attempts per request (`readAttempts`). */
  readonly attempts: number
  /** Deadline of each attempt, body included (`requestTimeoutMs`). */
  readonly timeoutMs: number
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Runs an idempotent request with up to `policy.attempts` attempts, each
 * under its own deadline, retrying only what may succeed on a second try
 * (no connection, timeout, 5xx, 408, 429). The SDK's own retries are off
 * (`maxAttempts: 1`): they would restart an attempt's clock without
 * covering the body, so a read could outlive every bound the options set.
 * A read therefore ends within `attempts × timeoutMs` plus a short backoff.
 */
export async function runRead<T>(
  policy: ReadPolicy,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await withinDeadline(policy.timeoutMs, run)
    } catch (error) {
      const outcome = classify(error, false)
      if (attempt >= policy.attempts || (outcome !== 'unsent' && outcome !== 'ambiguous')) {
        throw error
      }
      await sleep(25 * 2 ** attempt + Math.random() * 25)
    }
  }
}
