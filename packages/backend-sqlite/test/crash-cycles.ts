import { crashCyclesKnob } from '@agent-state/contract'

/**
 * Kill -9 cycles of `group-commit-crash.test.ts`: `AGENT_STATE_CRASH_CYCLES`,
 * default 10, held to the contract's floor of 10 (below it the file fails to
 * load; `crash-cycles.test.ts` proves it).
 */
export const GROUP_COMMIT_CRASH_CYCLES = crashCyclesKnob('the group commit crash test', 10)
