import { userInfo } from 'node:os'
import {
  listQuarantined,
  type QuarantineEntry,
  type QuarantineReport,
  quarantineRecord,
  quarantineWorkerSnapshot,
} from '@agent-state/runtime'
import type { Command } from 'commander'
import { guarded, withBackend } from '../command-runner.js'
import { addBackendOptions, addFormatOptions, type BackendFlags } from '../common-options.js'
import { EXIT, type ExitCode } from '../exit-codes.js'
import { alignRows, errLine, type FormatFlags, formatOf, outLine, printable } from '../output.js'

interface MoveFlags extends BackendFlags {
  readonly by?: string
  readonly reason: string
  readonly json?: boolean
}

/**
 * Who decides, for the audit report: `--by`, else the OS user running the
 * command (an operator acting by hand), so every quarantine names someone.
 */
function operator(flags: MoveFlags): string {
  if (flags.by !== undefined) return flags.by
  try {
    return userInfo().username
  } catch {
    return 'unknown-operator'
  }
}

async function printReport(report: QuarantineReport, json: boolean): Promise<void> {
  if (json) {
    await outLine(JSON.stringify(report, null, 2))
    return
  }
  await outLine(
    `quarantined ${printable(report.key)} (version ${printable(report.movedVersion)}, ${report.size} bytes, sha256 ${report.sha256})`,
  )
  if (report.diagnosis !== null)
    await outLine(`  diagnosis: ${report.diagnosis.code}: ${printable(report.diagnosis.message)}`)
  await outLine(`  the damaged bytes, unchanged: ${printable(report.recordKey)}`)
  await outLine(`  the audit report:             ${printable(report.reportKey)}`)
  await outLine(`  by ${printable(report.by)} at ${report.at}, reason: ${printable(report.reason)}`)
  await outLine(
    `  the original key is gone (deleted only after the copy was read back and compared)`,
  )
}

function addMove(
  parent: Command,
  name: string,
  argument: string,
  description: string,
  move: (
    flags: MoveFlags,
    target: string,
  ) => (backend: Parameters<typeof quarantineRecord>[0]) => Promise<QuarantineReport>,
  setCode: (code: ExitCode) => void,
): void {
  const command = parent
    .command(name)
    .description(description)
    .argument(argument)
    .requiredOption('--reason <text>', 'why, recorded in the audit report')
    .option('--by <operator>', 'who decides, recorded in the report (default: the OS user)')
    .option('--json', 'print the report as JSON')
    .exitOverride()
  addBackendOptions(command).action(async (target: string, flags: MoveFlags) => {
    setCode(
      await guarded(`quarantine ${name}`, [flags.url], () =>
        withBackend(flags, async (backend) => {
          await printReport(await move(flags, target)(backend), flags.json === true)
          return EXIT.OK
        }),
      ),
    )
  })
}

function listCells(entry: QuarantineEntry): string[] {
  const report = entry.report
  if (report === null)
    return [entry.quarantineId, '-', '-', '-', '-', `UNREADABLE: ${printable(entry.problem ?? '')}`]
  return [
    entry.quarantineId,
    report.at,
    printable(report.key),
    String(report.size),
    printable(report.by),
    report.diagnosis?.code ?? '-',
  ]
}

/**
 * Adds `quarantine worker <id>`, `quarantine key <key>` and `quarantine list`:
 * the runtime's audited quarantine (`quarantineWorkerSnapshot`,
 * `quarantineRecord`, `listQuarantined`), which moves a damaged record aside
 * and never deletes its bytes.
 */
export function addQuarantineCommand(program: Command, setCode: (code: ExitCode) => void): void {
  const quarantine = program
    .command('quarantine')
    .description(
      'move a corrupt worker snapshot or record aside (never deleting its bytes); list them',
    )
    .exitOverride()
  addMove(
    quarantine,
    'worker',
    '<workerId>',
    'quarantine a worker snapshot that fails to load (SNAPSHOT_CORRUPT or SNAPSHOT_INCOMPATIBLE)',
    (flags, workerId) => (backend) =>
      quarantineWorkerSnapshot(backend, workerId, { by: operator(flags), reason: flags.reason }),
    setCode,
  )
  addMove(
    quarantine,
    'key',
    '<key>',
    'quarantine the record at a key (any record an agent cannot read)',
    (flags, key) => (backend) =>
      quarantineRecord(backend, key, { by: operator(flags), reason: flags.reason }),
    setCode,
  )
  const list = quarantine
    .command('list')
    .description('list every quarantine, oldest first, with its report')
    .exitOverride()
  addFormatOptions(addBackendOptions(list)).action(async (flags: BackendFlags & FormatFlags) => {
    setCode(
      await guarded('quarantine list', [flags.url], () =>
        withBackend(flags, async (backend) => {
          const format = formatOf(flags)
          const entries = await listQuarantined(backend)
          if (format === 'json') await outLine(JSON.stringify({ quarantined: entries }, null, 2))
          else if (format === 'jsonl')
            for (const entry of entries) await outLine(JSON.stringify(entry))
          else
            for (const line of alignRows([
              ['QUARANTINE', 'AT', 'KEY', 'SIZE', 'BY', 'DIAGNOSIS'],
              ...entries.map(listCells),
            ]))
              await outLine(line)
          const unreadable = entries.filter((entry) => entry.report === null).length
          if (unreadable > 0) {
            errLine(
              `agent-state quarantine list: ${unreadable} report(s) could not be read (see the rows)`,
            )
            return EXIT.FAILED
          }
          return EXIT.OK
        }),
      ),
    )
  })
}
