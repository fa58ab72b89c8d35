import type { Capabilities } from '@agent-state/core'
import { describe, expect, it, vi } from 'vitest'
import { unprovedChecks } from '../src/verify-gate.js'

const caps = (over: Partial<Capabilities>): Capabilities => ({
  durable: false,
  multiProcess: false,
  multiHost: false,
  leaseClock: 'host',
  maxKeyBytes: 1024,
  maxValueBytes: 1 << 20,
  ...over,
})

const durabilityId = 'durability/values-versions-leases-and-tokens-survive-close-and-reopen'
const skipped = (id: string, reason: string) => ({
  checks: [
    { id, category: id.split('/')[0] as string, title: id, status: 'skipped' as const, reason },
  ],
})

describe('unprovedChecks (verify exits 1 when a claimed tier was skipped)', () => {
  it('accepts a skip of a tier whose capability is not claimed', () => {
    expect(
      unprovedChecks(skipped(durabilityId, 'capability durable is not claimed'), caps({})),
    ).toEqual([])
  })

  it('rejects a skip of a tier whose capability is claimed, whatever reason the summary gives', () => {
    for (const reason of [
      'capability durable is not claimed',
      'not run (filtered out, or the run stopped early)',
    ]) {
      expect(unprovedChecks(skipped(durabilityId, reason), caps({ durable: true }))).toEqual([
        { id: durabilityId, reason },
      ])
    }
  })

  it('rejects a skipped multi-process check on a backend claiming multiProcess', () => {
    const id = 'multi-process/n-by-m-compare-and-set-increments-across-processes-lose-no-update'
    const summary = skipped(id, 'no `process` option (child backend module) was given')
    expect(unprovedChecks(summary, caps({ multiProcess: true }))).toHaveLength(1)
    expect(unprovedChecks(summary, caps({}))).toEqual([])
  })

  it('judges a check it does not know by the capability its reason names', () => {
    const summary = skipped('future/tier', 'capability multiHost is not claimed')
    expect(unprovedChecks(summary, caps({}))).toEqual([])
    expect(unprovedChecks(summary, caps({ multiHost: true }))).toHaveLength(1)
    expect(unprovedChecks(skipped('future/tier', 'no reason'), caps({}))).toHaveLength(1)
  })

  it('holds a backend to the watch-interrupt seam it declares, as the suite does', () => {
    const id = 'change-notification/an-interrupted-watch-resyncs-and-misses-no-write-made-meanwhile'
    const reason = 'not applicable: polling loses nothing'
    const summary = skipped(id, reason)
    const claiming = caps({ changeNotification: { mode: 'poll', maxDelayMs: 500 } })
    // Declared not applicable on the instance: the skip is the declaration, accepted.
    expect(
      unprovedChecks(summary, claiming, { watchInterrupt: { notApplicable: 'polling' } }),
    ).toEqual([])
    // No seam given (the gate before it read one): the claim's resync is unproved.
    expect(unprovedChecks(summary, claiming)).toEqual([{ id, reason }])
    // A backend that can be interrupted must run the check: its skip is unproved.
    expect(unprovedChecks(summary, claiming, { watchInterrupt: async () => {} })).toEqual([
      { id, reason },
    ])
  })

  it('ignores checks that passed or failed', () => {
    const summary = {
      checks: [{ id: durabilityId, category: 'durability', title: 't', status: 'passed' as const }],
    }
    expect(unprovedChecks(summary, caps({ durable: true }))).toEqual([])
  })
})

describe('unprovedChecks: a claim skipped as not testable or by omission is not proved', () => {
  const valueId = 'errors/value-too-large-beyond-maxvaluebytes'

  it('rejects the value-size check skipped above AGENT_STATE_CONTRACT_MAX_VALUE_BYTES', () => {
    vi.stubEnv('AGENT_STATE_CONTRACT_MAX_VALUE_BYTES', String(1 << 20))
    try {
      const reason = `maxValueBytes ${1 << 26} is above AGENT_STATE_CONTRACT_MAX_VALUE_BYTES ${1 << 20}: the claim is not proved`
      // The suite, asked again with the same cap, still declines: still not proved.
      expect(unprovedChecks(skipped(valueId, reason), caps({ maxValueBytes: 1 << 26 }))).toEqual([
        { id: valueId, reason },
      ])
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it('rejects a check that never started (filtered out or stopped early)', () => {
    const reason = 'not run (filtered out, or the run stopped early)'
    expect(unprovedChecks(skipped(valueId, reason), caps({}))).toEqual([{ id: valueId, reason }])
  })
})
