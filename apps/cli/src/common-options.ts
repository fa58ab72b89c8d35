import { DEFAULT_BACKEND_URL } from '@agent-state/core'
import { type Command, InvalidArgumentError, Option } from 'commander'
import { DEFAULT_CONNECT_TIMEOUT_MS } from './connect.js'

/** The options every command that opens one backend takes. */
export interface BackendFlags {
  readonly url: string
  readonly namespace?: string
  readonly timeout: number
}

/** Parses a positive integer flag value, or fails as a usage error. */
export function positiveInt(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value)
    if (!Number.isSafeInteger(n) || n < 1) {
      throw new InvalidArgumentError(`${name} must be a positive integer`)
    }
    return n
  }
}

/** Adds `--timeout <ms>`. */
export function addTimeoutOption(command: Command): Command {
  return command.addOption(
    new Option('--timeout <ms>', 'bound for opening the backend and its first answer')
      .default(DEFAULT_CONNECT_TIMEOUT_MS)
      .argParser(positiveInt('--timeout')),
  )
}

/** Adds `--url`, `--namespace` and `--timeout`. */
export function addBackendOptions(command: Command): Command {
  command
    .addOption(
      new Option('-u, --url <url>', 'backend URL')
        .env('AGENT_STATE_URL')
        .default(DEFAULT_BACKEND_URL),
    )
    .addOption(
      new Option('-n, --namespace <name>', 'namespace inside the storage (default "default")'),
    )
  return addTimeoutOption(command)
}

/** Adds `--json` and `--jsonl`. */
export function addFormatOptions(command: Command): Command {
  return command
    .option('--json', 'print one JSON document')
    .option('--jsonl', 'print one JSON object per line (streams)')
}
