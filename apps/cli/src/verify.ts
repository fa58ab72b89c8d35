import { readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { redactUrl } from '@agent-state/core'
import { startVitest } from 'vitest/node'

/** Options of {@link verify}. */
export interface VerifyOptions {
  /** Backend URL to check, e.g. `file:./.agent-state` or `redis://127.0.0.1:6379/0`. */
  readonly url: string
  /** Where to write the JSON conformance summary, if anywhere. */
  readonly jsonPath?: string
}

/**
 * Runs the contract suite against the backend a URL names, in fresh
 * namespaces that each test destroys afterwards. Resolves `true` when every
 * test that ran passed.
 */
export async function verify(options: VerifyOptions): Promise<boolean> {
  const here = dirname(fileURLToPath(import.meta.url))
  const entry = join(here, `verify-entry.contract${extname(fileURLToPath(import.meta.url))}`)
  const reportPath = options.jsonPath ?? join(tmpdir(), `agent-state-verify-${process.pid}.json`)
  process.env.AGENT_STATE_VERIFY_URL = options.url
  process.env.AGENT_STATE_CONTRACT_REPORT = reportPath
  console.log(`agent-state verify ${redactUrl(options.url)}`)
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
  let totals: { passed: number; failed: number; skipped: number }
  try {
    totals = (JSON.parse(await readFile(reportPath, 'utf8')) as { totals: typeof totals }).totals
  } catch {
    console.error('agent-state verify: the contract suite wrote no conformance summary')
    return false
  } finally {
    if (options.jsonPath === undefined) await rm(reportPath, { force: true })
  }
  console.log(
    `agent-state verify ${redactUrl(options.url)}: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`,
  )
  if (options.jsonPath !== undefined)
    console.log(`conformance summary written to ${options.jsonPath}`)
  return !failed && !broken
}
