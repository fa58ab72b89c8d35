import { randomBytes } from 'node:crypto'
import { readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ConformanceSummary, WatchInterrupt } from '@agent-state/contract'
import { type Backend, type Capabilities, redactUrl, watchInterruptOf } from '@agent-state/core'
import { startVitest } from 'vitest/node'
import { connect, DEFAULT_CONNECT_TIMEOUT_MS } from './connect.js'
import { errLine } from './output.js'
import { unprovedChecks } from './verify-gate.js'

/** Options of {@link verify}. */
export interface VerifyOptions {
  /** Backend URL to check, e.g. `file:./.agent-state` or `redis://127.0.0.1:6379/0`. */
  readonly url: string
  /** Where to write the JSON conformance summary, if anywhere. */
  readonly jsonPath?: string
  /** Bound for the preflight (open, write, read, delete one key), in ms. */
  readonly timeoutMs?: number
}

/** What the preflight learned of the backend: its claims and its watch-interrupt seam. */
interface Preflight {
  readonly capabilities: Capabilities
  readonly watchInterrupt?: WatchInterrupt
}

/**
 * Opens the backend in a throwaway namespace and writes, reads and deletes
 * one key, within a bounded time, so a bad URL, an unreachable server, a wrong
 * password or a missing bucket is one clear line before any check runs.
 * Resolves the capabilities the backend claims.
 */
async function preflight(url: string, timeoutMs: number): Promise<Preflight> {
  const namespace = `t-preflight-${randomBytes(6).toString('hex')}`
  const probe = async (backend: Backend): Promise<void> => {
    const meta = await backend.put('agent-state-verify/probe', new TextEncoder().encode('probe'))
    await backend.get('agent-state-verify/probe')
    await backend.delete('agent-state-verify/probe', { ifMatch: meta.version })
  }
  const backend = await connect(url, { namespace, timeoutMs, probe })
  try {
    const seam = watchInterruptOf(backend)
    return {
      capabilities: backend.capabilities,
      // The suite's probe reads the same seam; the gate must see it to recompute the same skip.
      ...(seam === undefined
        ? {}
        : { watchInterrupt: typeof seam === 'string' ? { notApplicable: seam } : async () => {} }),
    }
  } finally {
    await backend.destroy?.().catch(() => undefined)
    await backend.close().catch(() => undefined)
  }
}

/**
 * Runs the contract suite against the backend a URL names, in fresh
 * namespaces that each test destroys afterwards. Resolves `true` when every
 * check that ran passed and no check that the backend's capabilities claim
 * was skipped. Throws a `CliError` (one line) when the preflight fails.
 */
export async function verify(options: VerifyOptions): Promise<boolean> {
  const shown = redactUrl(options.url)
  console.log(`agent-state verify ${shown}`)
  const { capabilities, watchInterrupt } = await preflight(
    options.url,
    options.timeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
  )
  const here = dirname(fileURLToPath(import.meta.url))
  const entry = join(here, `verify-entry.contract${extname(fileURLToPath(import.meta.url))}`)
  const reportPath = options.jsonPath ?? join(tmpdir(), `agent-state-verify-${process.pid}.json`)
  process.env.AGENT_STATE_VERIFY_URL = options.url
  process.env.AGENT_STATE_CONTRACT_REPORT = reportPath
  const fromSource = process.env.AGENT_STATE_FROM_SOURCE === '1'
  const conditions = fromSource ? ['@agent-state/source'] : []
  const vitest = await startVitest(
    'test',
    [],
    {
      root: dirname(here),
      config: false,
      watch: false,
      include: [entry],
      reporters: ['default'],
      testTimeout: 120_000,
      hookTimeout: 120_000,
    },
    { resolve: { conditions }, ssr: { resolve: { conditions } } },
  )
  const failed =
    vitest.state.getCountOfFailedTests() > 0 || vitest.state.getUnhandledErrors().length > 0
  const files = vitest.state.getFiles()
  const broken = files.length === 0 || files.some((file) => file.result?.state === 'fail')
  await vitest.close()
  // The suite prints the full summary itself; the JSON tells us it really ran.
  let summary: ConformanceSummary
  try {
    summary = JSON.parse(await readFile(reportPath, 'utf8')) as ConformanceSummary
  } catch {
    errLine('agent-state verify: the contract suite wrote no conformance summary')
    return false
  } finally {
    if (options.jsonPath === undefined) await rm(reportPath, { force: true })
  }
  const { totals } = summary
  // A declared limitation is neither a pass nor a skip: the count says how many there were.
  const limited = totals.limitation > 0 ? `, ${totals.limitation} declared limitation` : ''
  console.log(
    `agent-state verify ${shown}: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped${limited}`,
  )
  for (const check of summary.checks) {
    if (check.status === 'limitation') {
      console.log(`  DECLARED LIMITATION  ${check.id}: ${check.limitation ?? ''}`)
    }
  }
  const unproved = unprovedChecks(summary, capabilities, { watchInterrupt })
  for (const check of unproved) {
    console.log(
      `  NOT PROVED  ${check.id}: skipped (${check.reason}) although the capabilities claim it`,
    )
  }
  if (unproved.length > 0) {
    console.log(
      `agent-state verify ${shown}: ${unproved.length} check(s) that the claimed capabilities require did not run`,
    )
  }
  if (options.jsonPath !== undefined)
    console.log(`conformance summary written to ${options.jsonPath}`)
  return !failed && !broken && unproved.length === 0 && totals.passed > 0
}
