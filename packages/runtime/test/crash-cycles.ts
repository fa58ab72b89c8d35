import { crashCyclesKnob } from '@agent-state/contract'

/**
 * Kill -9 cycles of the effect ledger's crash tests (`run-crash.test.ts` per
 * multi-process backend, `run-crash-memory.test.ts`): `AGENT_STATE_CRASH_CYCLES`,
 * default 50, held to the contract's floor of 10 (below it these files fail
 * to load; `crash-cycles.test.ts` proves it).
 */
export const LEDGER_CRASH_CYCLES = crashCyclesKnob('the effect ledger crash test', 50)

/**
 * SIGKILLs per backend of the wake dispatcher processes (`wake-kill-cycles.test.ts`):
 * `AGENT_STATE_CRASH_CYCLES`, default 20 (issue 27's count), held to the contract's floor
 * of 10 (below it the file fails to load).
 */
export const WAKE_KILL_CYCLES = crashCyclesKnob('the wake dispatcher kill test', 20)

/** The fewest wakes the kill test may register: each cause needs a few (a tenth each of schedules, events and webhook calls). */
export const MIN_WAKE_KILL_WAKES = 60

/**
 * A wake count knob of the kill test: `variable` when set, else `fallback`, at least
 * {@link MIN_WAKE_KILL_WAKES} (a count below it, or one that is not a whole number, throws:
 * the file then fails to load rather than pass with a test that proves less).
 */
function wakeCountKnob(variable: string, fallback: number): number {
  const raw = process.env[variable]
  const configured = raw === undefined || raw.trim() === '' ? fallback : Number(raw)
  if (!Number.isSafeInteger(configured)) {
    throw new Error(`${variable} must be a whole number (got ${JSON.stringify(raw)})`)
  }
  if (configured < MIN_WAKE_KILL_WAKES) {
    throw new Error(
      `${variable} is ${configured}, below the wake kill test's floor of ${MIN_WAKE_KILL_WAKES}`,
    )
  }
  return configured
}

/**
 * Wakes per backend of the wake kill test on the filesystem, SQLite and Redis:
 * `AGENT_STATE_WAKE_KILL_WAKES`, default 1000 (issue 27's count).
 */
export const WAKE_KILL_WAKES = wakeCountKnob('AGENT_STATE_WAKE_KILL_WAKES', 1000)

/**
 * Wakes of the wake kill test on S3, whose every operation is an HTTP round trip (the issue
 * allows fewer): `AGENT_STATE_WAKE_KILL_WAKES_S3`, default 200.
 */
export const WAKE_KILL_WAKES_S3 = wakeCountKnob('AGENT_STATE_WAKE_KILL_WAKES_S3', 200)
