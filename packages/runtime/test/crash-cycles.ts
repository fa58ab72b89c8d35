import { crashCyclesKnob } from '@agent-state/contract'

/**
 * Kill -9 cycles of the effect ledger's crash tests (`run-crash.test.ts` per
 * multi-process backend, `run-crash-memory.test.ts`): `AGENT_STATE_CRASH_CYCLES`,
 * default 50, held to the contract's floor of 10 (below it these files fail
 * to load; `crash-cycles.test.ts` proves it).
 */
export const LEDGER_CRASH_CYCLES = crashCyclesKnob('the effect ledger crash test', 50)

/**
 * Kill cycles per backend of the wake dispatcher processes (`wake-kill-cycles.test.ts`):
 * `AGENT_STATE_CRASH_CYCLES`, default 10, the contract's floor (below it the file fails to load).
 */
export const WAKE_KILL_CYCLES = crashCyclesKnob('the wake dispatcher kill test', 10)
