import { isAgentStateError, redactUrl } from '@agent-state/core'
import { CliError, EXIT, type ExitCode } from './exit-codes.js'
import { printable } from './output.js'

/** Codes that mean "the thing you named does not exist". */
const NOT_FOUND_CODES: ReadonlySet<string> = new Set([
  'NOT_FOUND',
  'SESSION_NOT_FOUND',
  'SNAPSHOT_MISSING',
])
/** Codes that mean "the input was wrong", like a bad flag. */
const USAGE_CODES: ReadonlySet<string> = new Set([
  'INVALID_ARGUMENT',
  'INVALID_KEY',
  'INVALID_SESSION_ID',
  'INVALID_WORKER_ID',
])
/** Codes that mean "the backend cannot be used from here". */
const UNAVAILABLE_CODES: ReadonlySet<string> = new Set(['UNAVAILABLE', 'UNSUPPORTED', 'CLOSED'])

/** Query parameters whose values are secrets wherever they appear. */
const SECRET_PARAMETER = /pass|secret|token|credential|signature|auth/i

/**
 * Every secret a URL carries (the userinfo password, raw and decoded, and
 * query values whose name looks secret), so they can be removed from any
 * message, whoever built it. Defence in depth: backends already keep
 * credentials out of their messages, and `redactUrl` is what prints URLs.
 */
export function secretsOf(url: string): string[] {
  const secrets: string[] = []
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return secrets
  }
  const add = (value: string): void => {
    if (value.length < 3) return
    secrets.push(value)
    try {
      const decoded = decodeURIComponent(value)
      if (decoded !== value) secrets.push(decoded)
    } catch {
      // A password with a lone % is kept only raw.
    }
  }
  add(parsed.password)
  for (const [name, value] of parsed.searchParams) if (SECRET_PARAMETER.test(name)) add(value)
  return secrets
}

/** Removes every secret of `urls` from `text`. */
export function scrub(text: string, urls: readonly string[]): string {
  let out = text
  for (const url of urls) {
    for (const secret of secretsOf(url)) out = out.split(secret).join('***')
  }
  return out
}

/** A one-line, credential-free description of a failure and the exit code it maps to. */
export interface DescribedFailure {
  readonly message: string
  readonly exitCode: ExitCode
}

/**
 * Describes any failure as one line: an `AgentStateError` as `CODE: message`
 * with the exit code its code maps to, a {@link CliError} as itself, anything
 * else (a bug) as its message with exit code 1. Never a stack trace.
 */
export function describeFailure(error: unknown, urls: readonly string[] = []): DescribedFailure {
  let message: string
  let exitCode: ExitCode
  if (error instanceof CliError) {
    message = error.message
    exitCode = error.exitCode
  } else if (isAgentStateError(error)) {
    message = `${error.code}: ${error.message}`
    exitCode = NOT_FOUND_CODES.has(error.code)
      ? EXIT.NOT_FOUND
      : USAGE_CODES.has(error.code)
        ? EXIT.USAGE
        : UNAVAILABLE_CODES.has(error.code)
          ? EXIT.UNAVAILABLE
          : EXIT.FAILED
  } else {
    message = error instanceof Error ? error.message : String(error)
    exitCode = EXIT.FAILED
  }
  // One line, whatever the message held; URLs printed redacted.
  const oneLine = message.replace(/\s*\n\s*/g, ' ').trim()
  // Control characters escaped: a message quoting a hostile value cannot drive the terminal.
  return { message: printable(redactAll(scrub(oneLine, urls))), exitCode }
}

/** Redacts every `scheme://user:password@` that a message may quote. */
function redactAll(text: string): string {
  return text.replace(/[a-z][a-z0-9+.-]*:\/\/[^\s"'`]+/gi, (url) => redactUrl(url))
}
