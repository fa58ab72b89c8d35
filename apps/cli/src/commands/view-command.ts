import { type Command, Option } from 'commander'
import { guarded, withBackend } from '../command-runner.js'
import {
  addBackendOptions,
  addFormatOptions,
  type BackendFlags,
  positiveInt,
} from '../common-options.js'
import { EXIT, type ExitCode } from '../exit-codes.js'
import { alignRows, errLine, type FormatFlags, formatOf, outLine } from '../output.js'
import type { AgentView } from './agent-views.js'

/** Adds the command of one agent-level view (`sessions`, `workers`, ...). */
export function addViewCommand(
  program: Command,
  // biome-ignore lint/suspicious/noExplicitAny: each view types its own rows
  view: AgentView<any>,
  setCode: (code: ExitCode) => void,
): void {
  const command = program
    .command(view.name)
    .description(view.summary)
    .addOption(new Option('--limit <n>', 'stop after n rows').argParser(positiveInt('--limit')))
  addFormatOptions(addBackendOptions(command)).action(
    async (flags: BackendFlags & FormatFlags & { limit?: number }) => {
      setCode(
        await guarded(view.name, [flags.url], async () => {
          const format = formatOf(flags)
          return withBackend(flags, async (backend) => {
            const rows: object[] = []
            let broken = 0
            for await (const row of view.rows(backend, flags.limit)) {
              if (view.broken(row)) broken++
              if (format === 'jsonl') await outLine(JSON.stringify(row))
              else rows.push(row)
            }
            if (format === 'json') await outLine(JSON.stringify({ [view.name]: rows }, null, 2))
            if (format === 'text') {
              const now = Date.now()
              for (const line of alignRows([view.headers, ...rows.map((r) => view.cells(r, now))]))
                await outLine(line)
            }
            if (broken > 0) {
              errLine(
                `agent-state ${view.name}: ${broken} record(s) could not be read (see the rows)`,
              )
              return EXIT.FAILED
            }
            return EXIT.OK
          })
        }),
      )
    },
  )
}
