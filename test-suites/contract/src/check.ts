import type { Capabilities } from '@agent-state/core'
import type { Harness } from './harness.js'
import type { ContractOptions } from './types.js'

/** The categories of the contract, in report order. */
export const CATEGORIES = [
  'basic',
  'keys',
  'versions',
  'metadata',
  'listing',
  'get-many',
  'leases',
  'concurrency',
  'linearizability',
  'property',
  'errors',
  'durability',
  'multi-process',
  'crash',
  'change-notification',
] as const

/** A category of the contract. */
export type Category = (typeof CATEGORIES)[number]

/**
 * One named contract check. `run` rejects when the backend breaks the
 * contract; `skip` returns the reason the check does not apply (a capability
 * not claimed), or `undefined` when it runs.
 */
export interface ContractCheck {
  /** Stable id, `category/slug`. */
  readonly id: string
  readonly category: Category
  readonly title: string
  /** Per-check timeout in ms (vitest's default otherwise). */
  readonly timeoutMs?: number
  skip?(capabilities: Capabilities, options: ContractOptions): string | undefined
  run(harness: Harness): Promise<void>
}

/** The skip reason of a check whose capability is not claimed. */
export function notClaimed(capability: string): string {
  return `capability ${capability} is not claimed`
}

/** The skip reason of a check written for another declared model than the backend's. */
export function notApplicable(why: string): string {
  return `not applicable: ${why}`
}

const NOT_CLAIMED = /^capability [A-Za-z]+ is not claimed$/

/**
 * The kind of a skip reason: {@link notClaimed} and {@link notApplicable}
 * reasons are what they say; any other reason leaves a claim untested.
 */
export function skipCauseOf(
  reason: string,
): 'capability-not-claimed' | 'not-applicable' | 'not-testable' {
  if (NOT_CLAIMED.test(reason)) return 'capability-not-claimed'
  return reason.startsWith('not applicable: ') ? 'not-applicable' : 'not-testable'
}

/** Builds a check, deriving its id from the category and title. */
export function check(
  category: Category,
  title: string,
  run: (harness: Harness) => Promise<void>,
  extra: Pick<ContractCheck, 'skip' | 'timeoutMs'> = {},
): ContractCheck {
  const slug = title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
  return { id: `${category}/${slug}`, category, title, run, ...extra }
}
