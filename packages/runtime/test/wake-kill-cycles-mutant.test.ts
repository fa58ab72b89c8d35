/**
 * The check of wake-kill-cycles.test.ts against dispatcher children that
 * fire without the firing lease and without the conditional write (their
 * backend hands out made-up leases and drops `ifMatch` and `lease` from
 * writes of wake records): three of them over the same due wakes fire some
 * twice, which the check must see. On the filesystem only (the check is the
 * same on every backend), at 60 wakes and 10 kills: enough for the unfenced
 * children to fire some twice.
 */
import { MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { describe, expect, it } from 'vitest'
import { killCycles } from './wake-kill-scenario.js'

const FS = MULTI_PROCESS_BACKENDS.filter((b) => b.name === 'fs')

describe.each(FS)('unfenced dispatcher processes on $name', (backend) => {
  it('fire some wakes twice: fewer than all are fired exactly once', async () => {
    const outcome = await killCycles(backend, { kills: 10, wakes: 60, broken: true })
    console.info(outcome.summary)
    expect(outcome.registered).toBeGreaterThan(0)
    expect(outcome.exactlyOnce).toBeLessThan(outcome.registered)
  }, 240_000)
})
