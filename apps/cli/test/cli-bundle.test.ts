import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { BIN, type CliResult, cliCommand, runCli, runNode } from './cli-process.js'

/** `node bin/agent-state.js …` as users start it (the sources through tsx in an unbuilt checkout). */
const runRealBin = (args: readonly string[]): Promise<CliResult> => runNode([BIN, ...args])

// The other tests start the command with runCli: the real bin wrapper on a bundle of the sources
// (test/cli-bundle.ts). This file checks that what they run is that, and answers as users'
// command does.
describe('the command the tests run', () => {
  it('is bin/agent-state.js byte for byte, next to the dist/run.js it runs', () => {
    const { bin } = cliCommand()
    if (process.env.AGENT_STATE_CLI_TSX === '1') {
      expect(bin).toBe(BIN)
      return
    }
    expect(bin).not.toBe(BIN)
    expect(readFileSync(bin)).toEqual(readFileSync(BIN))
    expect(existsSync(join(dirname(dirname(bin)), 'dist', 'run.js'))).toBe(true)
  })

  it('answers as users’ command does: help, a usage error, a missing key', async () => {
    const cases = [['--help'], ['ls', '--bogus'], ['stat', 'no/such/key', '--url', 'memory:']]
    const [tests, users] = await Promise.all([
      Promise.all(cases.map((args) => runCli(args))),
      Promise.all(cases.map((args) => runRealBin(args))),
    ])
    const seen = (results: CliResult[]) =>
      results.map(({ status, stdout, stderr }) => ({ status, stdout, stderr }))
    expect(seen(tests)).toEqual(seen(users))
    expect(seen(tests).map((r) => r.status)).toEqual([0, 2, 4])
  })
})
