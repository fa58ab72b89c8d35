import type { ContractScale } from './types.js'

/** Default tier sizes. */
export const DEFAULT_SCALE: Required<ContractScale> = {
  instances: 16,
  increments: 10,
  processes: 4,
  crashCycles: 50,
  frozenRounds: 10,
  watchBurstWrites: 1000,
  watchDelayWrites: 20,
  watchMarginMs: 2000,
}

/** Default seed of the model-based property test. */
export const DEFAULT_SEED = 20240601

function envInt(name: string): number | undefined {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === '') return undefined
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new Error(`${name} must be a non-negative integer (got ${JSON.stringify(raw)})`)
  }
  return value
}

/** Tier sizes: env overrides, then options, then defaults. */
export function resolveScale(scale: ContractScale | undefined): Required<ContractScale> {
  return {
    instances:
      envInt('AGENT_STATE_CONTRACT_INSTANCES') ?? scale?.instances ?? DEFAULT_SCALE.instances,
    increments:
      envInt('AGENT_STATE_CONTRACT_INCREMENTS') ?? scale?.increments ?? DEFAULT_SCALE.increments,
    processes:
      envInt('AGENT_STATE_CONTRACT_PROCESSES') ?? scale?.processes ?? DEFAULT_SCALE.processes,
    crashCycles:
      envInt('AGENT_STATE_CRASH_CYCLES') ?? scale?.crashCycles ?? DEFAULT_SCALE.crashCycles,
    frozenRounds:
      envInt('AGENT_STATE_FROZEN_ROUNDS') ?? scale?.frozenRounds ?? DEFAULT_SCALE.frozenRounds,
    watchBurstWrites:
      envInt('AGENT_STATE_WATCH_BURST_WRITES') ??
      scale?.watchBurstWrites ??
      DEFAULT_SCALE.watchBurstWrites,
    watchDelayWrites:
      envInt('AGENT_STATE_WATCH_DELAY_WRITES') ??
      scale?.watchDelayWrites ??
      DEFAULT_SCALE.watchDelayWrites,
    watchMarginMs:
      envInt('AGENT_STATE_WATCH_MARGIN_MS') ?? scale?.watchMarginMs ?? DEFAULT_SCALE.watchMarginMs,
  }
}

/** The property-test seed: env `AGENT_STATE_CONTRACT_SEED`, then the option, then the default. */
export function resolveSeed(seed: number | undefined): number {
  return envInt('AGENT_STATE_CONTRACT_SEED') ?? seed ?? DEFAULT_SEED
}

/** Path of the JSON summary: env `AGENT_STATE_CONTRACT_REPORT`, then the option. */
export function resolveReportPath(path: string | undefined): string | undefined {
  const fromEnv = process.env.AGENT_STATE_CONTRACT_REPORT
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : path
}

/**
 * `AGENT_STATE_CONTRACT_MAX_VALUE_BYTES`: the largest value the suite may
 * allocate to prove `maxValueBytes` (memory stays near three times it). Unset,
 * every claimed limit is proved; a claim above a set cap is skipped as
 * `not-testable`, which leaves it unproved (`agent-state verify` fails).
 */
export function valueBytesCap(): number | undefined {
  return envInt('AGENT_STATE_CONTRACT_MAX_VALUE_BYTES')
}

/** The skip reason of a `maxValueBytes` claim above {@link valueBytesCap}, or `undefined`. */
export function valueCapSkip(maxValueBytes: number): string | undefined {
  const cap = valueBytesCap()
  return cap !== undefined && maxValueBytes > cap
    ? `maxValueBytes ${maxValueBytes} is above AGENT_STATE_CONTRACT_MAX_VALUE_BYTES ${cap}: the claim is not proved`
    : undefined
}

/**
 * `AGENT_STATE_CONTRACT_CHECKS`: a regular expression; only checks whose id
 * matches run (to rerun one check while debugging). The others are declared
 * but never started: the summary lists them as `not-run`, and
 * `agent-state verify` fails on each one the capabilities claim.
 */
export function checkFilter(): RegExp | undefined {
  const raw = process.env.AGENT_STATE_CONTRACT_CHECKS
  return raw === undefined || raw === '' ? undefined : new RegExp(raw)
}
