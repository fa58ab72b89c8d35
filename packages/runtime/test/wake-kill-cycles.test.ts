/**
 * Three wake dispatcher processes per backend (fs, SQLite, Redis, S3 on the
 * servers of the global setup), firing a mix of timeouts, schedules, events
 * and webhook calls posted to their endpoints, under SIGKILL, SIGSTOP and self-kills after a
 * firing decision (wake-kill-scenario.ts): every wake must be fired exactly
 * once (one firing recorded, one firing seen by the handlers whatever the
 * redeliveries), the index left empty. Kill cycles per backend:
 * `AGENT_STATE_CRASH_CYCLES` (default 10, the contract's floor of 10: below
 * it this file fails to load; crash-cycles.test.ts proves it).
 */
import { MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { describe, expect, it } from 'vitest'
import { WAKE_KILL_CYCLES } from './crash-cycles.js'
import { KILL_BACKEND_NAMES, killCycles } from './wake-kill-scenario.js'

const BACKENDS = MULTI_PROCESS_BACKENDS.filter((b) => KILL_BACKEND_NAMES.includes(b.name))

// The backends run side by side: each mostly waits (for leases to lapse, children to start).
describe.concurrent.each(BACKENDS)('three dispatcher processes on $name', (backend) => {
  it(`${WAKE_KILL_CYCLES} SIGKILLs and SIGSTOPs mid-fire: every wake fires exactly once`, async () => {
    const outcome = await killCycles(backend, WAKE_KILL_CYCLES)
    console.info(outcome.summary)
    expect(outcome.failures).toEqual([])
    expect(outcome.registered).toBeGreaterThan(0)
    // Every cause of the mix is there, and every webhook call was answered 202 in the end.
    expect(Object.keys(outcome.causes).sort()).toEqual(['event', 'schedule', 'timeout', 'webhook'])
    expect(outcome.calls.accepted).toBe(outcome.calls.made)
    expect(outcome.calls.made).toBeGreaterThan(0)
    expect(outcome).toMatchObject({
      fired: outcome.registered,
      exactlyOnce: outcome.registered,
      indexLeft: 0,
    })
  }, 240_000)
})
