import { connect } from '../connect.js'
import { CliError, EXIT, type ExitCode } from '../exit-codes.js'
import { alignRows, type FormatFlags, formatOf, outLine, printable } from '../output.js'
import { copyAll, copySucceeded, copySummaryLines } from './copy.js'
import type { KeyReport } from './copy-key.js'

/** The flags of `copy`, as commander parses them. */
export interface CopyFlags extends FormatFlags {
  readonly prefix?: string
  readonly dryRun?: boolean
  readonly checksum?: boolean
  readonly includeLeased?: boolean
  readonly overwriteNewer?: boolean
  readonly namespace?: string
  readonly toNamespace?: string
  readonly concurrency: number
  readonly progress: boolean
  readonly verbose?: boolean
  readonly timeout: number
}

const ACTION_WORDS: Record<KeyReport['action'], [string, string]> = {
  created: ['created', 'would create'],
  updated: ['updated', 'would update'],
  same: ['same', 'same'],
  'skipped-leased': ['leased', 'leased'],
  'skipped-newer': ['newer', 'newer'],
  conflict: ['conflict', 'conflict'],
  vanished: ['vanished', 'vanished'],
  error: ['error', 'error'],
}

/** Runs `copy`: opens both sides (bounded, checked), copies, prints the report. */
export async function runCopy(fromUrl: string, toUrl: string, flags: CopyFlags): Promise<ExitCode> {
  const format = formatOf(flags)
  const fromNamespace = flags.namespace
  const toNamespace = flags.toNamespace ?? flags.namespace
  if (fromUrl === toUrl && fromNamespace === toNamespace) {
    throw new CliError(
      'the source and the destination are the same backend and namespace',
      EXIT.USAGE,
    )
  }
  const dryRun = flags.dryRun === true
  const from = await connect(fromUrl, {
    timeoutMs: flags.timeout,
    ...(fromNamespace === undefined ? {} : { namespace: fromNamespace }),
  })
  try {
    const to = await connect(toUrl, {
      timeoutMs: flags.timeout,
      ...(toNamespace === undefined ? {} : { namespace: toNamespace }),
    })
    try {
      const showBar = flags.progress && process.stderr.isTTY === true
      const result = await copyAll(from, to, {
        dryRun,
        checksum: flags.checksum === true,
        includeLeased: flags.includeLeased === true,
        overwriteNewer: flags.overwriteNewer === true,
        concurrency: flags.concurrency,
        ...(flags.prefix === undefined ? {} : { prefix: flags.prefix }),
        ...(showBar ? { progress: process.stderr } : {}),
        ...(format === 'jsonl'
          ? { onKey: (report: KeyReport) => outLine(JSON.stringify({ type: 'key', ...report })) }
          : {}),
      })
      const ok = copySucceeded(result, dryRun)
      if (format === 'jsonl') {
        await outLine(
          JSON.stringify({
            type: 'totals',
            dryRun,
            ok,
            checkMode: result.checkMode,
            ...result.totals,
            durationMs: result.durationMs,
          }),
        )
      } else if (format === 'json') {
        await outLine(
          JSON.stringify({ dryRun, ok, ...result, durationMs: result.durationMs }, null, 2),
        )
      } else {
        // The plan lists every key a dry run would touch; a copy lists what is not the same.
        const shown = result.keys.filter((r) =>
          flags.verbose === true ? true : dryRun ? r.action !== 'same' : r.check !== 'same',
        )
        const lines = alignRows(
          shown.map((r) => [
            ACTION_WORDS[r.action][dryRun ? 1 : 0],
            r.check,
            printable(r.key),
            r.detail === undefined ? '' : printable(r.detail),
          ]),
        )
        for (const line of lines) await outLine(line)
        for (const line of copySummaryLines(result, dryRun)) await outLine(line)
      }
      return ok ? EXIT.OK : EXIT.FAILED
    } finally {
      await to.close().catch(() => undefined)
    }
  } finally {
    await from.close().catch(() => undefined)
  }
}
