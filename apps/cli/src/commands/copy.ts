import { type Backend, walkList } from '@agent-state/core'
import cliProgress from 'cli-progress'
import { printable } from '../output.js'
import {
  type CopyAction,
  type CopyCheck,
  type CopyKeyOptions,
  copyKey,
  type KeyReport,
} from './copy-key.js'

/** Options of {@link copyAll}. */
export interface CopyOptions extends CopyKeyOptions {
  /** Only keys starting with this plain string prefix. */
  readonly prefix?: string
  /** Keys copied at once. */
  readonly concurrency: number
  /** Draw a progress bar on this stream (a TTY); none when absent. */
  readonly progress?: NodeJS.WriteStream
  /** Called with every key's report as soon as it is known (for streaming output). */
  readonly onKey?: (report: KeyReport) => void | Promise<void>
}

/** Counts by action and by check. */
export interface CopyTotals {
  readonly keys: number
  readonly actions: Readonly<Record<CopyAction, number>>
  readonly checks: Readonly<Record<CopyCheck, number>>
}

/**
 * What a check verdict rests on: `size-and-writer` (the default fast check: size and writer
 * identity, and for a key not written by this copy a destination no older than the source; the
 * bytes are not compared, so a value of the same size and writer with other bytes is `same`), or
 * `sha256` (`--checksum`: the bytes of both sides, read and hashed).
 */
export type CopyCheckMode = 'size-and-writer' | 'sha256'

/** Everything a copy did. */
export interface CopyResult {
  /** What each key's `check` rests on. */
  readonly checkMode: CopyCheckMode
  readonly totals: CopyTotals
  /** Reports of every key, in byte order. */
  readonly keys: readonly KeyReport[]
  readonly durationMs: number
}

const ACTIONS: readonly CopyAction[] = [
  'created',
  'updated',
  'same',
  'skipped-leased',
  'skipped-newer',
  'conflict',
  'vanished',
  'error',
]
const CHECKS: readonly CopyCheck[] = ['same', 'differs', 'missing', 'error']

async function listAll(backend: Backend, prefix: string | undefined): Promise<string[]> {
  const keys: string[] = []
  const options = prefix === undefined || prefix === '' ? { limit: 1000 } : { limit: 1000, prefix }
  for await (const page of walkList(backend, options)) {
    for (const entry of page.entries) keys.push(entry.key)
  }
  return keys
}

/**
 * Copies every key under `prefix` from one backend to another, `concurrency`
 * keys at a time (see `copyKey` for what happens to each). The keys are
 * listed first, so the progress bar knows the total; a rerun skips what is
 * already identical, so an interrupted copy resumes.
 */
export async function copyAll(
  from: Backend,
  to: Backend,
  options: CopyOptions,
): Promise<CopyResult> {
  const started = performance.now()
  const keys = await listAll(from, options.prefix)
  const reports: KeyReport[] = new Array(keys.length)
  const bar =
    options.progress === undefined
      ? undefined
      : new cliProgress.SingleBar(
          {
            stream: options.progress,
            format: `${options.dryRun ? 'plan' : 'copy'} [{bar}] {percentage}% | {value}/{total} keys | {eta_formatted} left | {key}`,
            hideCursor: true,
            clearOnComplete: false,
            stopOnComplete: false,
            etaBuffer: 200,
            fps: 10,
          },
          cliProgress.Presets.legacy,
        )
  bar?.start(keys.length, 0, { key: '' })
  let next = 0
  let done = 0
  const work = async (): Promise<void> => {
    while (next < keys.length) {
      const index = next++
      const key = keys[index] as string
      const report = await copyKey(from, to, key, options)
      reports[index] = report
      done++
      bar?.update(done, { key: printable(key).slice(0, 40) })
      await options.onKey?.(report)
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, work))
  } finally {
    bar?.update(done, { key: '' })
    bar?.stop()
  }
  const actions = Object.fromEntries(ACTIONS.map((a) => [a, 0])) as Record<CopyAction, number>
  const checks = Object.fromEntries(CHECKS.map((c) => [c, 0])) as Record<CopyCheck, number>
  for (const report of reports) {
    actions[report.action]++
    checks[report.check]++
  }
  return {
    checkMode: options.checksum ? 'sha256' : 'size-and-writer',
    totals: { keys: keys.length, actions, checks },
    keys: reports,
    durationMs: Math.round(performance.now() - started),
  }
}

/** Whether a finished copy left every key identical (a dry run: whether every read worked). */
export function copySucceeded(result: CopyResult, dryRun: boolean): boolean {
  if (dryRun) return result.totals.checks.error === 0
  return result.totals.checks.same === result.totals.keys
}

/** How the text report names what a check verdict rests on. */
const CHECK_LABELS: Record<CopyCheckMode, string> = {
  'size-and-writer': 'size and writer, not bytes (--checksum compares bytes)',
  sha256: 'SHA-256 of the bytes',
}

/** The closing text lines: what was done, and the check by state (labelled with what it compared). */
export function copySummaryLines(result: CopyResult, dryRun: boolean): string[] {
  const a = result.totals.actions
  const c = result.totals.checks
  const verb = dryRun ? 'would create' : 'created'
  const lines = [
    `${result.totals.keys} keys in ${(result.durationMs / 1000).toFixed(1)} s: ${verb} ${a.created}, ${dryRun ? 'would update' : 'updated'} ${a.updated}, already same ${a.same}, skipped leased ${a['skipped-leased']}, skipped newer at destination ${a['skipped-newer']}, conflicts ${a.conflict}, vanished ${a.vanished}, errors ${a.error}`,
    `${dryRun ? 'before the copy' : 'check'} by ${CHECK_LABELS[result.checkMode]}: same ${c.same}, differs ${c.differs}, missing ${c.missing}, error ${c.error}`,
  ]
  if (a['skipped-leased'] > 0) {
    lines.push(
      'keys under a live lease at the source were not copied: rerun when their holders are done, or pass --include-leased',
    )
  }
  if (a['skipped-newer'] > 0) {
    lines.push(
      'destination values newer than the source were kept: pass --overwrite-newer to replace them',
    )
  }
  return lines
}
