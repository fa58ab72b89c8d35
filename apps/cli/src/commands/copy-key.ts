import { createHash } from 'node:crypto'
import {
  type Backend,
  isAgentStateError,
  type PutOptions,
  type StoredValue,
  type ValueMeta,
  type WriterIdentity,
} from '@agent-state/core'

/** What the copy did (or, in a dry run, would do) with one key. */
export type CopyAction =
  /** Written at the destination with create-if-absent. */
  | 'created'
  /** Written at the destination with compare-and-set on the version just read there. */
  | 'updated'
  /** Already identical at the destination. */
  | 'same'
  /** A live lease holds the key at the source: something is working on it. */
  | 'skipped-leased'
  /** The destination holds a different value written after the source's: never overwritten silently. */
  | 'skipped-newer'
  /** The destination changed between the read and the conditional write. */
  | 'conflict'
  /** Deleted at the source after the listing; nothing to copy. */
  | 'vanished'
  /** A read or write failed. */
  | 'error'

/** The final comparison of one key, destination against source. */
export type CopyCheck = 'same' | 'differs' | 'missing' | 'error'

/** The report line of one key. */
export interface KeyReport {
  readonly key: string
  readonly action: CopyAction
  /** In a dry run the comparison before any write; otherwise after the copy. */
  readonly check: CopyCheck
  /** For `error`, `conflict`, `skipped-*`: why. Log-safe. */
  readonly detail?: string
}

/** Options of {@link copyKey}. */
export interface CopyKeyOptions {
  readonly dryRun: boolean
  /** Compare the bytes (SHA-256), not size, writer and time. */
  readonly checksum: boolean
  /** Copy keys under a live source lease too. */
  readonly includeLeased: boolean
  /** Replace a destination value written after the source's. */
  readonly overwriteNewer: boolean
}

type Observed = StoredValue | ValueMeta | null

function metaOf(value: Observed): ValueMeta | null {
  if (value === null) return null
  return 'meta' in value ? value.meta : value
}

function sameWriter(a: WriterIdentity | null, b: WriterIdentity | null): boolean {
  if (a === null || b === null) return a === b
  return (
    a.writerId === b.writerId &&
    a.stageId === b.stageId &&
    a.sessionId === b.sessionId &&
    a.workerId === b.workerId
  )
}

function digest(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/**
 * Compares the destination with the source. With `checksum` the bytes decide
 * (plus size and writer); without, a destination value of the same size and
 * writer, written no earlier than the source's, counts as the same: the
 * rclone-style fast check, which reads no destination body.
 */
export function compare(
  source: StoredValue,
  destination: Observed,
  checksum: boolean,
): 'same' | 'differs' | 'missing' {
  const dest = metaOf(destination)
  if (dest === null) return 'missing'
  if (dest.size !== source.meta.size || !sameWriter(dest.writer, source.meta.writer)) {
    return 'differs'
  }
  if (checksum) {
    if (destination === null || !('value' in destination)) return 'differs'
    return digest(destination.value) === digest(source.value) ? 'same' : 'differs'
  }
  return dest.updatedAt >= source.meta.updatedAt ? 'same' : 'differs'
}

function detailOf(error: unknown): string {
  return isAgentStateError(error) ? `${error.code}: ${error.message}` : String(error)
}

async function readDestination(
  backend: Backend,
  key: string,
  checksum: boolean,
): Promise<Observed> {
  return checksum ? backend.get(key) : backend.head(key)
}

/**
 * Copies one key: reads the source (and its lease), compares with the
 * destination, writes conditionally (create-if-absent on a missing key,
 * compare-and-set on the version read otherwise), then reads the destination
 * again to check it. Never throws: every outcome is a report line.
 */
export async function copyKey(
  from: Backend,
  to: Backend,
  key: string,
  options: CopyKeyOptions,
): Promise<KeyReport> {
  let source: StoredValue | null
  let leaseHolder: string | null = null
  let before: Observed
  try {
    const lease = options.includeLeased ? null : await from.getLease(key)
    leaseHolder = lease?.holder ?? null
    source = await from.get(key)
    if (source === null) return { key, action: 'vanished', check: 'same' }
    before = await readDestination(to, key, options.checksum)
  } catch (error) {
    return { key, action: 'error', check: 'error', detail: detailOf(error) }
  }
  const check = compare(source, before, options.checksum)
  if (leaseHolder !== null) {
    return {
      key,
      action: 'skipped-leased',
      check,
      detail: `leased by ${leaseHolder} at the source`,
    }
  }
  if (check === 'same') return { key, action: 'same', check }
  const dest = metaOf(before)
  const newer = dest !== null && dest.updatedAt > source.meta.updatedAt
  if (newer && !options.overwriteNewer) {
    return {
      key,
      action: 'skipped-newer',
      check,
      detail: 'the destination value was written after the source value',
    }
  }
  const action = dest === null ? 'created' : 'updated'
  if (options.dryRun) return { key, action, check }
  const put: PutOptions = {
    ...(source.meta.writer === null ? {} : { writer: source.meta.writer }),
    ...(dest === null ? { ifNoneMatch: '*' as const } : { ifMatch: dest.version }),
  }
  let written: ValueMeta
  try {
    written = await to.put(key, source.value, put)
  } catch (error) {
    if (isAgentStateError(error, 'PRECONDITION_FAILED')) {
      return {
        key,
        action: 'conflict',
        check: 'differs',
        detail: 'the destination changed during the copy',
      }
    }
    return { key, action: 'error', check: 'error', detail: detailOf(error) }
  }
  try {
    const after = await readDestination(to, key, options.checksum)
    return { key, action, check: checkWritten(source, after, written, options.checksum) }
  } catch (error) {
    return { key, action, check: 'error', detail: detailOf(error) }
  }
}

/**
 * The check after a write. With `checksum`, the bytes read back decide.
 * Without, the version read back must be the one the write returned (nobody
 * replaced it) with the source's size and writer; time is not compared,
 * since the destination's clock stamped the write.
 */
function checkWritten(
  source: StoredValue,
  after: Observed,
  written: ValueMeta,
  checksum: boolean,
): CopyCheck {
  if (checksum) return compare(source, after, true)
  const meta = metaOf(after)
  if (meta === null) return 'missing'
  return meta.version === written.version &&
    meta.size === source.meta.size &&
    sameWriter(meta.writer, source.meta.writer)
    ? 'same'
    : 'differs'
}
