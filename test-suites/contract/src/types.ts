import type { Backend, Clock } from '@agent-state/core'

/** What `create` receives: the test's isolated namespace and the clock it must use. */
export interface ContractContext {
  /** A fresh namespace per test, matching `^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`. */
  readonly namespace: string
  /**
   * The clock the backend must use for `updatedAt` and (for `leaseClock: 'host'`) lease
   * expiry. Usually a manual clock the test moves; the multi-process and crash tiers pass
   * the real clock because their children run on real time.
   */
  readonly clock: Clock
}

/** How to load the backend in a child process, for the multi-process and crash tiers. */
export interface ContractProcessOptions {
  /**
   * Absolute path of a module exporting
   * `createBackend(options: unknown, ctx: { namespace: string }): Backend | Promise<Backend>`.
   * It is loaded with `node --conditions=@agent-state/source --import tsx`, so it may be TypeScript.
   */
  readonly module: string
  /** JSON-serializable options passed to `createBackend`. */
  readonly options?: unknown
  /**
   * Optional, for the frozen-writer tier: the write steps the module's
   * `createSteppedBackend(options, ctx, onStep)` reports through `onStep(step)`
   * (synchronously, at that point of a write). With them, half of the tier's
   * rounds stop the holder at an exact step (cycled through, in a put and in a
   * renew); without them every round stops it at a random moment.
   */
  readonly writeSteps?: readonly string[]
}

/**
 * A backend's declared limitation of the frozen-writer tier: a holder
 * frozen inside its write keeps a lock no contender may break (SQLite's
 * database lock). The tier then requires every contender blocked by it to
 * fail fast, within `busyTimeoutMs` + 1000 ms, with exactly `code` and a
 * message matching `message`; the summary records the check as a declared
 * limitation (never a pass), and any other behaviour fails it. Requires
 * `process.writeSteps`, so the tier can freeze the holder inside its write.
 */
export interface FrozenWriterLimitation {
  readonly code: string
  readonly message: RegExp
  /** How long the backend waits for a lock before failing (its busy timeout). */
  readonly busyTimeoutMs: number
}

/** Sizes of the concurrency, multi-process and crash tiers. */
export interface ContractScale {
  /** Racing instances in the concurrency tier (at least 16 by default). */
  readonly instances?: number
  /** Increments per instance or process in the N×M counter tests. */
  readonly increments?: number
  /** Child processes in the multi-process tier (at least 4 by default). */
  readonly processes?: number
  /** Kill -9 cycles in the crash tier. */
  readonly crashCycles?: number
  /** Rounds of the frozen-writer tier (at least 10, `MIN_FROZEN_ROUNDS`). */
  readonly frozenRounds?: number
  /** Writes of the change-notification burst, spread over `processes` writers (default 1000). */
  readonly watchBurstWrites?: number
  /** Writes timed one by one by the change-notification delay check (default 20). */
  readonly watchDelayWrites?: number
  /**
   * Allowance added to the claimed `maxDelayMs` before a hint counts as late
   * (default 2000 ms: a loaded 2-core host delays timers, IPC and the writer's
   * acknowledgement by hundreds of milliseconds). See the README.
   */
  readonly watchMarginMs?: number
}

/**
 * How the change-notification tier interrupts a watcher's channel (a Redis
 * subscriber connection killed, an inotify queue overflowed), so it can
 * prove the backend resyncs: a function doing it to the watching instance
 * and resolving as soon as the channel is broken (the backend must recover
 * by itself; the tier writes at once, while it is down),
 * or `{ notApplicable }` with why the delivery has no channel to lose (an
 * in-process backend). Absent on a backend that claims `changeNotification`
 * (as under `agent-state verify`, which opens a URL): the resync check is
 * skipped as `not-testable`, so the summary shows that part of the claim
 * unproved, never passed.
 */
export type WatchInterrupt =
  | ((watcher: Backend) => Promise<void>)
  | { readonly notApplicable: string }

/** Where to write the conformance summary. */
export interface ContractReportOptions {
  /** Path of a JSON file to write the summary to (env `AGENT_STATE_CONTRACT_REPORT` wins). */
  readonly json?: string
}

/** Options of `describeBackendContract`. */
export interface ContractOptions {
  /** Shown in test names and in the summary. */
  readonly name: string
  /**
   * Creates a new backend instance on the shared underlying storage, in `ctx.namespace`.
   * Called many times per test (instances race on the same keys).
   */
  readonly create: (ctx: ContractContext) => Backend | Promise<Backend>
  /** Enables the multi-process and crash tiers where the capabilities claim them. */
  readonly process?: ContractProcessOptions
  /** Tier sizes; see {@link ContractScale} and the README for the env overrides. */
  readonly scale?: ContractScale
  /** Seed of the model-based property test (env `AGENT_STATE_CONTRACT_SEED` wins). Default 20240601. */
  readonly seed?: number
  /** Conformance summary output. */
  readonly report?: ContractReportOptions
  /** A declared limitation of the frozen-writer tier (see {@link FrozenWriterLimitation}). */
  readonly frozenWriterLimitation?: FrozenWriterLimitation
  /** How the change-notification tier interrupts a watch (see {@link WatchInterrupt}). */
  readonly watchInterrupt?: WatchInterrupt
}

/** Outcome of one check in the summary. */
export type CheckStatus = 'passed' | 'failed' | 'skipped' | 'limitation'

/**
 * Why a check was skipped:
 * - `capability-not-claimed`: the backend does not claim the capability the check proves;
 * - `not-applicable`: the check tests another declared model than the backend's
 *   (expiry on an injected clock, for a `server` or `observer` lease clock, whose
 *   expiry is tested on real time instead);
 * - `not-testable`: a claim the suite cannot test at its size (a `maxValueBytes`
 *   above 16 MiB): that claim stays unproved;
 * - `not-run`: declared but never started (filtered out, or the run stopped early).
 * Only the first two leave no claim unproved. A claimed capability whose tier
 * cannot run is never a skip: it fails.
 */
export type SkipCause = 'capability-not-claimed' | 'not-applicable' | 'not-testable' | 'not-run'

/**
 * The scale a check actually ran at, as it reports it (for example
 * `{ cyclesConfigured: 50, cyclesVerified: 50, acknowledgedWrites: 812 }` for
 * the crash tier, `{ processes: 4 }` for the multi-process tier).
 */
export type CheckScale = Readonly<Record<string, number>>

/** One check's row in the conformance summary. */
export interface CheckResult {
  readonly id: string
  readonly category: string
  readonly title: string
  readonly status: CheckStatus
  /** Why the check was skipped. */
  readonly reason?: string
  /** The kind of skip, so tools can tell "not claimed" from "did not run". */
  readonly skipCause?: SkipCause
  /** The scale the check ran at (set when it ran far enough to report it). */
  readonly scale?: CheckScale
  /** The failure message. */
  readonly error?: string
  /** What the backend declared and the check verified, for status `limitation`. */
  readonly limitation?: string
  readonly durationMs?: number
}

/** Counts of one category in the summary. */
export interface CategorySummary {
  readonly passed: number
  readonly failed: number
  readonly skipped: number
  /** Checks that verified a limitation the backend declared (neither passed nor skipped). */
  readonly limitation: number
}

/** The conformance summary, printed after the suite and written as JSON on request. */
export interface ConformanceSummary {
  readonly backend: string
  readonly contractVersion: 1
  readonly startedAt: string
  readonly finishedAt: string
  /** The capabilities the backend declared (what the run had to prove), when it could be created. */
  readonly capabilities?: Readonly<Record<string, unknown>>
  readonly totals: CategorySummary
  readonly categories: Readonly<Record<string, CategorySummary>>
  readonly checks: readonly CheckResult[]
}
