import { CONTRACT_CHECKS, type ConformanceSummary, skipReason } from '@agent-state/contract'
import type { Capabilities } from '@agent-state/core'

/** A check that was skipped although the backend's capabilities claim what it tests. */
export interface UnprovedCheck {
  readonly id: string
  /** The skip reason the suite recorded. */
  readonly reason: string
}

const CAPABILITY_REASON = /^capability (\w+) is not claimed$/

/**
 * The skipped checks of a conformance summary that the backend's claimed
 * capabilities enable: a claim that was not proved. A skip is accepted only
 * when the check, asked with these capabilities and a child-process module
 * given (verify always gives one), still declines to run: a capability the
 * backend does not claim, or a limit too large to test. A check this CLI does
 * not know is accepted only when its reason names a capability that is indeed
 * not claimed.
 */
export function unprovedChecks(
  summary: Pick<ConformanceSummary, 'checks'>,
  capabilities: Capabilities,
): UnprovedCheck[] {
  const unproved: UnprovedCheck[] = []
  const options = {
    name: 'verify',
    create: () => {
      throw new Error('not called')
    },
    process: { module: 'child-factory' },
  }
  for (const result of summary.checks) {
    if (result.status !== 'skipped') continue
    const reason = result.reason ?? ''
    const known = CONTRACT_CHECKS.find((check) => check.id === result.id)
    let accepted: boolean
    if (known !== undefined) {
      accepted = skipReason(known, capabilities, options) !== undefined
    } else {
      const named = CAPABILITY_REASON.exec(reason)?.[1]
      accepted =
        named !== undefined && (capabilities as unknown as Record<string, unknown>)[named] === false
    }
    if (!accepted) unproved.push({ id: result.id, reason })
  }
  return unproved
}
