import { parseArgs } from 'node:util'
import { DEFAULT_BACKEND_URL, isAgentStateError } from '@agent-state/core'
import { verify } from './verify.js'

const USAGE = `Usage: agent-state <command>

Commands:
  verify [backend-url] [--json <file>]
      Runs the backend contract suite against the backend the URL names, in
      fresh namespaces it removes afterwards, prints the conformance summary,
      and exits non-zero on any failure. Default URL: ${DEFAULT_BACKEND_URL}
      Examples: memory:  file:./.agent-state  sqlite:./state.db
                redis://127.0.0.1:6379/0  s3://bucket/prefix?endpoint=http://127.0.0.1:7480&region=us-east-1
  help
      Shows this text.
`

/**
 * Runs the `agent-state` command with the given arguments and resolves its
 * exit code: 0 on success, 1 on failure, 2 on bad usage.
 */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE)
    return command === undefined ? 2 : 0
  }
  if (command !== 'verify') {
    console.error(`agent-state: unknown command ${JSON.stringify(command)}\n\n${USAGE}`)
    return 2
  }
  let parsed: ReturnType<typeof parseVerifyArgs>
  try {
    parsed = parseVerifyArgs(rest)
  } catch (error) {
    console.error(`agent-state verify: ${(error as Error).message}\n\n${USAGE}`)
    return 2
  }
  try {
    const ok = await verify(parsed)
    return ok ? 0 : 1
  } catch (error) {
    const message = isAgentStateError(error) ? `${error.code}: ${error.message}` : String(error)
    console.error(`agent-state verify: ${message}`)
    return 1
  }
}

function parseVerifyArgs(args: string[]): { url: string; jsonPath?: string } {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { json: { type: 'string' } },
  })
  if (positionals.length > 1) throw new Error('verify takes at most one backend URL')
  const url = positionals[0] ?? DEFAULT_BACKEND_URL
  return values.json === undefined ? { url } : { url, jsonPath: values.json }
}
