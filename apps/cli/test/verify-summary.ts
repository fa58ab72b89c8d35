import type { ConformanceSummary } from '@agent-state/contract'
import { MIN_CRASH_CYCLES } from '@agent-state/contract'

/**
 * Small tiers: these tests prove the command's behaviour, the backends prove themselves elsewhere.
 * The crash tier runs at the suite's floor: fewer cycles fail it as proving nothing. The
 * frozen-writer tier runs its default (and floor) of 10 rounds.
 */
export const SMALL = {
  AGENT_STATE_CRASH_CYCLES: String(MIN_CRASH_CYCLES),
  AGENT_STATE_CONTRACT_INSTANCES: '16',
  AGENT_STATE_CONTRACT_INCREMENTS: '3',
}

export const MIB = 1024 * 1024
export const VALUE_CHECK = 'errors/value-too-large-beyond-maxvaluebytes'
export const INTERRUPT_CHECK =
  'change-notification/an-interrupted-watch-resyncs-and-misses-no-write-made-meanwhile'
export const FROZEN_CHECK =
  'multi-process/a-holder-frozen-mid-write-never-blocks-a-takeover-and-is-refused-when-it-wakes'
export const CRASH_CHECK = 'crash/acknowledged-writes-survive-kill-9-and-nothing-is-torn'
/** The check that runs only where `crossKeyFence` is NOT claimed (a fenced put is `UNSUPPORTED`). */
export const UNCLAIMED_FENCE_CHECK =
  'leases/cross-key-fence-refused-with-unsupported-where-crosskeyfence-is-not-claimed'
/** The checks of a `crossKeyFence` claim (skipped, not claimed, on fs and S3). */
export const FENCE_CHECKS = [
  'leases/cross-key-fence-a-live-fence-writes-a-released-expired-or-re-acquired-one-is-lease-lost-by-token',
  'leases/cross-key-fence-checked-before-the-written-key-own-lease-and-the-precondition',
  'leases/cross-key-fence-a-write-in-flight-when-its-fence-is-taken-over-is-ordered-before-the-takeover',
]

/** One check of a verify summary, with the scale it ran at. */
export type Check = ConformanceSummary['checks'][number] & { scale: Record<string, number> }

/** The check `id` of `summary`; throws when the summary has none. */
export function checkOf(summary: ConformanceSummary, id: string): Check {
  const found = summary.checks.find((c) => c.id === id)
  if (found === undefined) throw new Error(`no check ${id} in the summary`)
  return found as Check
}

/** The checks of one status, with what the summary says of them (shown in full when it fails). */
export function checksWith(summary: ConformanceSummary, status: string): Check[] {
  return summary.checks.filter((c) => c.status === status) as Check[]
}

/** The lines of `text` that are not blank. */
export function nonEmpty(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '')
}
