import { DEFAULT_BACKEND_URL, escapeForDisplay, redactUrl } from '@agent-state/core'
import { type Command, InvalidArgumentError, Option } from 'commander'
import { guarded, withBackend } from '../command-runner.js'
import { addBackendOptions, type BackendFlags } from '../common-options.js'
import { CliError, EXIT, type ExitCode } from '../exit-codes.js'
import { errLine, outLine } from '../output.js'
import { openInBrowser } from './browser-opener.js'
import { isOperatorName } from './ui-actions.js'
import { isLoopbackHost, startUiServer } from './ui-server.js'

/** The flags of `agent-state ui`. */
export interface UiFlags extends BackendFlags {
  readonly host: string
  readonly port: number
  readonly allowNonLoopback?: boolean
  readonly allowActions?: boolean
  readonly operator?: string
  readonly open?: boolean
}

/** The operator of `--allow-actions`, checked; `undefined` when actions are off. */
function operatorOf(flags: UiFlags): string | undefined {
  if (flags.allowActions !== true) {
    if (flags.operator !== undefined)
      throw new CliError('--operator names who acts: add --allow-actions', EXIT.USAGE)
    return undefined
  }
  if (flags.operator === undefined)
    throw new CliError(
      '--allow-actions needs --operator <name> (recorded in every audit entry)',
      EXIT.USAGE,
    )
  if (!isOperatorName(flags.operator))
    throw new CliError('--operator is 1 to 64 letters, digits, ".", "_", "@" or "-"', EXIT.USAGE)
  return flags.operator
}

function port(value: string): number {
  const n = Number(value)
  if (!Number.isSafeInteger(n) || n < 0 || n > 65_535) {
    throw new InvalidArgumentError('--port must be an integer from 0 to 65535')
  }
  return n
}

/** Resolves when the process is asked to stop (SIGINT, SIGTERM, SIGHUP). */
function stopRequested(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, resolve)
  })
}

/** Adds `agent-state ui [url]`: the local web inspector (see src/ui/ui-server.ts). */
export function addUiCommand(program: Command, setCode: (code: ExitCode) => void): void {
  const command = program
    .command('ui')
    .description(
      'serve a web inspector of a backend on 127.0.0.1 (prints its address with an access token); read-only unless --allow-actions',
    )
    .argument('[url]', 'backend URL (default: --url, AGENT_STATE_URL or the embedded default)')
    .addOption(new Option('--host <address>', 'address to listen on').default('127.0.0.1'))
    .addOption(
      new Option('--port <n>', 'port to listen on (0: a free one)').default(0).argParser(port),
    )
    .option(
      '--allow-non-loopback',
      'allow a --host that is not a loopback address (anyone who can reach it and has the token can read the backend)',
    )
    .option(
      '--allow-actions',
      'let the page resolve effects, close suspended workers and quarantine records (each audited)',
    )
    .option('--operator <name>', 'who acts, with --allow-actions: recorded in every audit entry')
    .option('--open', 'open the address in a browser ($BROWSER, else xdg-open or open)')
  addBackendOptions(command).action(async (positional: string | undefined, flags: UiFlags) => {
    const url = positional ?? flags.url ?? DEFAULT_BACKEND_URL
    setCode(
      await guarded('ui', [url], async () => {
        if (!isLoopbackHost(flags.host) && flags.allowNonLoopback !== true) {
          throw new CliError(
            `--host ${escapeForDisplay(flags.host)} is not a loopback address: add --allow-non-loopback to serve it there`,
            EXIT.USAGE,
          )
        }
        const operator = operatorOf(flags)
        return withBackend({ ...flags, url }, async (backend) => {
          const server = await startUiServer({
            backend,
            info: {
              url,
              namespace: flags.namespace ?? 'default',
              name: backend.name,
              capabilities: backend.capabilities,
            },
            host: flags.host,
            port: flags.port,
            ...(operator === undefined
              ? {}
              : {
                  actions: {
                    operator,
                    report: (line: string) => errLine(`agent-state ui: ${escapeForDisplay(line)}`),
                  },
                }),
          })
          if (!isLoopbackHost(flags.host)) {
            errLine(
              `agent-state ui: WARNING: listening on ${escapeForDisplay(flags.host)}, not a loopback address: anyone who can reach it and has the token can read this backend, over plain HTTP`,
            )
          }
          await outLine(
            `agent-state ui: ${escapeForDisplay(redactUrl(url))} (namespace ${escapeForDisplay(flags.namespace ?? 'default')}), ${operator === undefined ? 'read-only' : `actions on, as operator ${operator}`}`,
          )
          await outLine(`  open ${server.url}`)
          await outLine('  Ctrl-C stops it')
          // Only when asked: the token is in the address, and the operator picks the browser.
          if (flags.open === true) {
            const failed = await openInBrowser(server.url)
            if (failed !== null)
              errLine(
                `agent-state ui: could not open a browser (${escapeForDisplay(failed)}); open the address above`,
              )
          }
          await stopRequested()
          await server.close()
          return EXIT.OK
        })
      }),
    )
  })
}
