import { type Capabilities, redactUrl } from '@agent-state/core'
import { afterAll, describe, it } from 'vitest'
import { CATEGORIES, type ContractCheck, skipCauseOf } from './check.js'
import { runThenCleanUp } from './check-run.js'
import { CONTRACT_CHECKS } from './checks/all.js'
import { createHarness, probeCapabilities } from './harness.js'
import { checkFilter, resolveReportPath } from './knobs.js'
import { formatSummary, SummaryRecorder, writeSummary } from './summary.js'
import type { CheckScale, ConformanceSummary, ContractOptions } from './types.js'

/** Why `check` does not run against a backend with `capabilities`, or `undefined`. */
export function skipReason(
  check: ContractCheck,
  capabilities: Capabilities,
  options: ContractOptions,
): string | undefined {
  return check.skip?.(capabilities, options)
}

/**
 * Runs one check against the backend: a fresh harness, the check, then
 * cleanup (destroy and close). Resolves the scale the check reported it ran
 * at; rejects when the backend breaks the contract (the error then carries
 * that scale as `contractScale`). Used by `describeBackendContract` and
 * directly by tools and mutant tests.
 */
export async function runContractCheck(
  check: ContractCheck,
  options: ContractOptions,
  capabilities?: Capabilities,
): Promise<CheckScale> {
  return (await runContractCheckOutcome(check, options, capabilities)).scale
}

/** What a check that did not fail ran at, and the declared limitation it verified, if any. */
export interface ContractCheckOutcome {
  readonly scale: CheckScale
  readonly limitation?: string
}

/**
 * As {@link runContractCheck}, also resolving the declared limitation the
 * check verified (the frozen-writer tier on a backend that declares one).
 */
export async function runContractCheckOutcome(
  check: ContractCheck,
  options: ContractOptions,
  capabilities?: Capabilities,
): Promise<ContractCheckOutcome> {
  const caps = capabilities ?? (await probeCapabilities(options))
  const harness = createHarness(options, caps)
  const failure = await runThenCleanUp(
    () => check.run(harness),
    () => harness.cleanup(),
  )
  const scale = { ...harness.reported }
  if (failure !== undefined) {
    if (typeof failure === 'object' && failure !== null && Object.keys(scale).length > 0) {
      Object.assign(failure, { contractScale: scale })
    }
    throw failure
  }
  const limitation = harness.limitation
  return limitation === undefined ? { scale } : { scale, limitation }
}

function scaleOf(error: unknown): CheckScale | undefined {
  const scale = (error as { contractScale?: CheckScale } | null)?.contractScale
  return typeof scale === 'object' ? scale : undefined
}

/** The summary of the most recent `describeBackendContract` run in this process, by backend name. */
export const lastSummaries = new Map<string, ConformanceSummary>()

/**
 * Declares the contract suite for one backend as vitest tests, one test per
 * check, grouped by category. Checks that a capability does not claim are
 * declared with `it.skipIf(true)` so vitest reports them skipped by name, and
 * the summary lists them with the reason. After the suite the conformance
 * summary is printed and, when requested, written as JSON.
 *
 * @example
 * ```ts
 * import { describeBackendContract } from '@agent-state/contract'
 * describeBackendContract({ name: 'my-backend', create: (ctx) => createMyBackend(ctx) })
 * ```
 */
export function describeBackendContract(options: ContractOptions): void {
  // A name may be a backend URL (the CLI passes one): never show its credentials.
  const name = redactUrl(options.name)
  const recorder = new SummaryRecorder(name)
  describe(`Backend contract: ${name}`, async () => {
    afterAll(() => {
      const summary = recorder.summary()
      lastSummaries.set(name, summary)
      console.log(formatSummary(summary))
      const path = resolveReportPath(options.report?.json)
      if (path !== undefined) writeSummary(path, summary)
    })
    let capabilities: Capabilities
    try {
      capabilities = await probeCapabilities(options)
    } catch (error) {
      // No instance, no contract: one failing test and a summary that says why.
      const message = error instanceof Error ? error.message : String(error)
      recorder.record({
        id: 'basic/create',
        category: 'basic',
        title: 'create an instance',
        status: 'failed',
        error: message,
      })
      it('create an instance', () => {
        throw error
      })
      return
    }
    recorder.capabilities({ ...capabilities })
    const only = checkFilter()
    for (const category of CATEGORIES) {
      const checks = CONTRACT_CHECKS.filter((c) => c.category === category)
      if (checks.length === 0) continue
      describe(category, () => {
        for (const check of checks) {
          const reason = skipReason(check, capabilities, options)
          const title = reason === undefined ? check.title : `${check.title} (skipped: ${reason})`
          if (reason !== undefined) {
            recorder.record({
              id: check.id,
              category,
              title: check.title,
              status: 'skipped',
              reason,
              skipCause: skipCauseOf(reason),
            })
          } else {
            recorder.planned({ id: check.id, category, title: check.title })
          }
          // Filtered out: declared, never started, so recorded as not run (a claim left unproved).
          const filtered = reason === undefined && only !== undefined && !only.test(check.id)
          it.skipIf(reason !== undefined || filtered)(
            title,
            async () => {
              recorder.started({ id: check.id, category, title: check.title })
              const started = performance.now()
              let scale: CheckScale
              let limitation: string | undefined
              try {
                ;({ scale, limitation } = await runContractCheckOutcome(
                  check,
                  options,
                  capabilities,
                ))
              } catch (error) {
                const failedScale = scaleOf(error)
                recorder.record({
                  id: check.id,
                  category,
                  title: check.title,
                  status: 'failed',
                  error: error instanceof Error ? error.message : String(error),
                  durationMs: Math.round(performance.now() - started),
                  ...(failedScale === undefined ? {} : { scale: failedScale }),
                })
                throw error
              }
              recorder.record({
                id: check.id,
                category,
                title: check.title,
                // A verified declared limitation is reported as such, never as a pass.
                status: limitation === undefined ? 'passed' : 'limitation',
                ...(limitation === undefined ? {} : { limitation }),
                durationMs: Math.round(performance.now() - started),
                ...(Object.keys(scale).length === 0 ? {} : { scale }),
              })
            },
            check.timeoutMs,
          )
        }
      })
    }
  })
}
