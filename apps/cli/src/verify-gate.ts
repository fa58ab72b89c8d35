import {
  CONTRACT_CHECKS,
  type ConformanceSummary,
  skipCauseOf,
  skipReason,
  type WatchInterrupt,
} from '@agent-state/contract'
import type { Capabilities } from '@agent-state/core'

/** A check that was skipped although the backend's capabilities claim what it tests. */
export interface UnprovedCheck {
  readonly id: string
  /** The skip reason the suite recorded. */
  readonly reason: string
}

const CAPABILITY_REASON = /^capability (\w+) is not claimed$/

/**
 * The skipped checks of a conformance summary that leave a claim unproved. A
 * skip is accepted only when the check, asked with these capabilities and a
 * child-process module given (verify always gives one), still declines to run
 * for a reason that proves nothing is claimed: a capability the backend does
 * not claim, or another declared model (`not-applicable`). A check skipped by
 * omission (never started) or as not testable (a value limit above
 * `AGENT_STATE_CONTRACT_MAX_VALUE_BYTES`) is unproved. A check this CLI does
 * not know is accepted only when its reason names a capability that is indeed
 * not claimed. `seams.watchInterrupt` is what the backend instance carries
 * under core's `WATCH_INTERRUPT` (verify reads it in its preflight): a
 * backend that declares the interrupted-watch check not applicable (hints
 * handed over inside the write, or polling that loses nothing) is held to
 * that declaration, as the suite's own probe is.
 */
export function unprovedChecks(
  summary: Pick<ConformanceSummary, 'checks'>,
  capabilities: Capabilities,
  seams: { readonly watchInterrupt?: WatchInterrupt | undefined } = {},
): UnprovedCheck[] {
  const unproved: UnprovedCheck[] = []
  const options = {
    name: 'verify',
    create: () => {
      throw new Error('not called')
    },
    process: { module: 'child-factory' },
    ...(seams.watchInterrupt === undefined ? {} : { watchInterrupt: seams.watchInterrupt }),
  }
  for (const result of summary.checks) {
    if (result.status !== 'skipped') continue
    const reason = result.reason ?? ''
    const known = CONTRACT_CHECKS.find((check) => check.id === result.id)
    let accepted: boolean
    if (known !== undefined) {
      const recomputed = skipReason(known, capabilities, options)
      accepted = recomputed !== undefined && skipCauseOf(recomputed) !== 'not-testable'
    } else {
      const named = CAPABILITY_REASON.exec(reason)?.[1]
      accepted =
        named !== undefined && (capabilities as unknown as Record<string, unknown>)[named] === false
    }
    if (!accepted) unproved.push({ id: result.id, reason })
  }
  return unproved
}
