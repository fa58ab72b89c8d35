import { DEFAULT_BACKEND_URL } from '@agent-state/core'
import { Command, CommanderError, Option } from 'commander'
import { MODULE_ENV, resolveModuleSpecifier } from './backend-importer.js'
import { guarded, withBackend } from './command-runner.js'
import { AGENT_VIEWS } from './commands/agent-views.js'
import { type CopyFlags, runCopy } from './commands/copy-command.js'
import { catValue, printKeys, statKey, statLines } from './commands/inspect.js'
import { addQuarantineCommand } from './commands/quarantine-command.js'
import { addViewCommand } from './commands/view-command.js'
import {
  addBackendOptions,
  addFormatOptions,
  addTimeoutOption,
  type BackendFlags,
  positiveInt,
} from './common-options.js'
import { runDemo } from './demo/demo.js'
import { EXIT, type ExitCode } from './exit-codes.js'
import { describeFailure } from './failure.js'
import { loadOptional } from './optional-package.js'
import { errLine, type FormatFlags, formatOf, outLine } from './output.js'
import { addUiCommand } from './ui/ui-command.js'

const EXIT_CODES_HELP = `
Exit codes:
  0    success; every check held
  1    a check failed or was not proved, a copy left a key different, a record is damaged
  2    bad usage: unknown command or flag, bad argument, malformed or unknown backend URL
  3    the backend cannot be reached or opened: server down, wrong password, missing
       bucket or package, no answer within --timeout
  4    the named key, session or worker does not exist
  130  interrupted (SIGINT); 143 terminated (SIGTERM): child processes are stopped too

Backend URLs: memory:  file:./.agent-state  sqlite:./state.db  redis://[user:pass@]host:6379/0
  s3://bucket/prefix?endpoint=…&region=…  (S3 credentials from the AWS environment)
  any other scheme with --module <path-or-package> (or AGENT_STATE_MODULE), for example
  agent-state --module ./my-backend.ts verify lmdb:./data
Passwords in URLs are never printed.`

/** What `verify` loads beyond the CLI's dependencies (optional peers, see the README). */
const VERIFY_PACKAGES = ['@agent-state/contract', 'vitest'] as const

function buildProgram(setCode: (code: ExitCode) => void): Command {
  const program = new Command('agent-state')
    .description('Durable state for long-running AI agents: check, inspect and copy a backend.')
    .addHelpText('after', EXIT_CODES_HELP)
    .showSuggestionAfterError(true)
    // Every command's help lists the program's own options (`--module`) under "Global Options":
    // set before the commands are added, which inherit it, so `verify --help` shows a third
    // party how to verify their backend.
    .configureHelp({ showGlobalOptions: true })
    .addOption(
      new Option(
        '--module <path-or-package>',
        'a third-party backend (a package or a .js/.ts file exporting createBackendFromUrl) serving every URL whose scheme is not built in',
      ).env(MODULE_ENV),
    )
    .hook('preAction', (command) => {
      const module = (command.opts() as { module?: string }).module
      // Through the environment, so verify's vitest workers and every child process load it too.
      if (module !== undefined) process.env[MODULE_ENV] = resolveModuleSpecifier(module)
    })

  addTimeoutOption(
    program
      .command('demo')
      .description(
        'run a scripted agent that shows sessions, handoff, kill -9 and resume, and a refused second resumer',
      )
      .argument('[url]', 'backend URL', DEFAULT_BACKEND_URL),
  ).action(async (url: string, flags: { timeout: number }) => {
    setCode(
      await guarded('demo', [url], async () =>
        (await runDemo(url, flags.timeout, (line) => console.log(line))) ? EXIT.OK : EXIT.FAILED,
      ),
    )
  })

  addTimeoutOption(
    program
      .command('verify')
      .description(
        'run the Backend contract suite against a backend, in fresh namespaces it removes afterwards',
      )
      .argument('[url]', 'backend URL', DEFAULT_BACKEND_URL)
      .option('--json <file>', 'write the conformance summary as JSON'),
  ).action(async (url: string, flags: { json?: string; timeout: number }) => {
    setCode(
      await guarded('verify', [url], async () => {
        // The contract suite and its runner are optional peers: loaded only here.
        const { verify } = await loadOptional(
          () => import('./verify.js'),
          VERIFY_PACKAGES,
          'agent-state verify',
        )
        return (await verify({
          url,
          timeoutMs: flags.timeout,
          ...(flags.json === undefined ? {} : { jsonPath: flags.json }),
        }))
          ? EXIT.OK
          : EXIT.FAILED
      }),
    )
  })

  addFormatOptions(
    addBackendOptions(
      program
        .command('ls')
        .description(
          'list keys under a prefix, grouped at "/" (reads no value; --long adds one head per key)',
        )
        .argument('[prefix]', 'plain string prefix', '')
        .option('-r, --recursive', 'list every key instead of grouping at "/"')
        .option('-l, --long', 'also show writer identity and version')
        .addOption(
          new Option('--limit <n>', 'stop after n rows').argParser(positiveInt('--limit')),
        ),
    ),
  ).action(
    async (
      prefix: string,
      flags: BackendFlags & FormatFlags & { recursive?: boolean; long?: boolean; limit?: number },
    ) => {
      setCode(
        await guarded('ls', [flags.url], async () => {
          const format = formatOf(flags)
          return withBackend(flags, async (backend) => {
            await printKeys(
              backend,
              {
                prefix,
                recursive: flags.recursive === true,
                long: flags.long === true,
                ...(flags.limit === undefined ? {} : { limit: flags.limit }),
              },
              format,
            )
            return EXIT.OK
          })
        }),
      )
    },
  )

  addBackendOptions(
    program
      .command('cat')
      .description("write a key's value to stdout, byte for byte")
      .argument('<key>'),
  ).action(async (key: string, flags: BackendFlags) => {
    setCode(
      await guarded('cat', [flags.url], () =>
        withBackend(flags, async (backend) => {
          await catValue(backend, key)
          return EXIT.OK
        }),
      ),
    )
  })

  addBackendOptions(
    program
      .command('stat')
      .description("show a key's version, size, writer, update time and lease (reads no value)")
      .argument('<key>')
      .option('--json', 'print JSON'),
  ).action(async (key: string, flags: BackendFlags & { json?: boolean }) => {
    setCode(
      await guarded('stat', [flags.url], () =>
        withBackend(flags, async (backend) => {
          const stat = await statKey(backend, key)
          if (flags.json === true) await outLine(JSON.stringify(stat, null, 2))
          else for (const line of statLines(stat)) await outLine(line)
          return EXIT.OK
        }),
      ),
    )
  })

  for (const view of AGENT_VIEWS) addViewCommand(program, view, setCode)
  addQuarantineCommand(program, setCode)
  addUiCommand(program, setCode)

  addFormatOptions(
    addTimeoutOption(
      program
        .command('copy')
        .description(
          'copy every key (value and writer identity) from one backend to another, then check each',
        )
        .argument('<from-url>')
        .argument('<to-url>')
        .option('--prefix <prefix>', 'only keys starting with this plain string')
        .option('--dry-run', 'print the plan, write nothing')
        .option('--checksum', 'compare values byte for byte (reads destination values)')
        .option('--include-leased', 'also copy keys under a live lease at the source')
        .option('--overwrite-newer', 'replace destination values written after the source value')
        .option('-n, --namespace <name>', 'namespace on both sides (default "default")')
        .option('--to-namespace <name>', 'namespace at the destination (default: --namespace)')
        .addOption(
          new Option('--concurrency <n>', 'keys copied at once')
            .default(16)
            .argParser(positiveInt('--concurrency')),
        )
        .option('--no-progress', 'no progress bar (it is drawn only when stderr is a terminal)')
        .option(
          '-v, --verbose',
          'list every key in the report (default: only keys that are not the same; a dry run lists the plan)',
        ),
    ),
  ).action(async (fromUrl: string, toUrl: string, flags: CopyFlags) => {
    setCode(await guarded('copy', [fromUrl, toUrl], () => runCopy(fromUrl, toUrl, flags)))
  })

  return program
}

/**
 * Runs the `agent-state` command with the given arguments (without the
 * program name) and resolves its exit code (see {@link EXIT}). Prints to
 * stdout and stderr; never throws.
 */
export async function main(argv: readonly string[]): Promise<number> {
  let code: ExitCode = EXIT.OK
  const program = buildProgram((c) => {
    code = c
  })
  program.exitOverride()
  for (const command of program.commands) command.exitOverride()
  if (argv.length === 0) {
    program.outputHelp({ error: true })
    return EXIT.USAGE
  }
  try {
    await program.parseAsync([...argv], { from: 'user' })
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version are successful answers; every other parse error is bad usage.
      if (
        error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.version' ||
        error.code === 'commander.help'
      )
        return error.code === 'commander.help' ? EXIT.USAGE : EXIT.OK
      return EXIT.USAGE
    }
    const { message, exitCode } = describeFailure(error)
    errLine(`agent-state: ${message}`)
    return exitCode
  }
  return code
}
