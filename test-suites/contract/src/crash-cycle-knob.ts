import { MIN_CRASH_CYCLES } from './checks/crash.js'

/**
 * The kill -9 cycle count of a crash tier outside the contract (a package's
 * own crash test): `AGENT_STATE_CRASH_CYCLES` when set, else `fallback`, held
 * to the contract's floor ({@link MIN_CRASH_CYCLES}). A count below the floor
 * throws (the test file then fails to load: a run that would prove nothing is
 * a failure, never a pass), and so does a value that is not a whole number.
 * `tier` names the test in the message.
 */
export function crashCyclesKnob(tier: string, fallback: number): number {
  const raw = process.env.AGENT_STATE_CRASH_CYCLES
  const configured = raw === undefined || raw.trim() === '' ? fallback : Number(raw)
  if (!Number.isSafeInteger(configured)) {
    throw new Error(`AGENT_STATE_CRASH_CYCLES must be a whole number (got ${JSON.stringify(raw)})`)
  }
  if (configured < MIN_CRASH_CYCLES) {
    throw new Error(
      `${tier} is configured with ${configured} kill -9 cycles, below the floor of ${MIN_CRASH_CYCLES}: it would prove nothing`,
    )
  }
  return configured
}
