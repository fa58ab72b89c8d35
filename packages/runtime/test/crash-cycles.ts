import { crashCyclesKnob } from '@agent-state/contract'

/**
 * Kill -9 cycles of the effect ledger's crash tests (`run-crash.test.ts` per
 * multi-process backend, `run-crash-memory.test.ts`): `AGENT_STATE_CRASH_CYCLES`,
 * default 50, held to the contract's floor of 10 (below it these files fail
 * to load; `crash-cycles.test.ts` proves it).
 */
export const LEDGER_CRASH_CYCLES = crashCyclesKnob('the effect ledger crash test', 50)
