/**
 * Runs a fixture script (test/fixtures/...) in a child Node process and resolves however it
 * ends, SIGKILL included, with its JSON output lines: for the crash tests, whose children
 * kill themselves at a chosen point.
 */
import { runChild } from '@agent-state/backend-targets'
import { PACKAGE_DIR } from './child-process.js'

/** How a fixture child ended. */
export interface FixtureChildResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  /** Its stdout, one JSON object a line. */
  readonly lines: readonly Record<string, unknown>[]
  readonly stderr: string
}

/** Runs `fixture` (relative to the package) with `args`; killed after 90 s. */
export async function runFixtureChild(
  fixture: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
): Promise<FixtureChildResult> {
  const { code, signal, stdout, stderr } = await runChild(PACKAGE_DIR, fixture, args, 90_000, env)
  const lines = stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
  return { code, signal, lines, stderr }
}
