import type { Backend } from '@agent-state/core'
import { wakeError } from '../shared/errors.js'
import { WAKES_DUE_PREFIX, wakeBucketOf, wakeBucketPrefix } from '../shared/layout.js'
import { dueAtOfId } from './wake-records.js'

/**
 * The walk over the due-time index (docs/runtime/wakes.md, A tick): what
 * makes a tick cost O(due wakes). Kept apart from the firing so each can be
 * reviewed (and broken in the tests) on its own.
 */

/**
 * What a walk learns of the wakes it leaves pending: the earliest due time
 * it passed over (a marker not due yet, or the start of the first future
 * bucket), `null` when the index holds nothing past now. The dispatcher
 * sleeps until then where hints tell it about new wakes.
 */
export interface DueHorizon {
  nextDueAt: number | null
}

/** Notes `dueAt` as pending in `horizon` when it is the earliest yet. */
export function notePending(horizon: DueHorizon | undefined, dueAt: number): void {
  if (horizon === undefined) return
  if (horizon.nextDueAt === null || dueAt < horizon.nextDueAt) horizon.nextDueAt = dueAt
}

/**
 * The buckets holding markers, in time order, up to now's bucket. One bucket
 * per listing page: a page of several groups could read into many future
 * buckets, and the tick would pay for wakes that are not due.
 */
export async function* dueBuckets(
  backend: Backend,
  now: number,
  horizon?: DueHorizon,
): AsyncGenerator<string> {
  const nowBucket = wakeBucketOf(now)
  let cursor: string | undefined
  for (;;) {
    const page = await backend.list({
      prefix: WAKES_DUE_PREFIX,
      delimiter: '/',
      limit: 1,
      ...(cursor === undefined ? {} : { cursor }),
    })
    for (const group of page.prefixes ?? []) {
      const bucket = group.slice(WAKES_DUE_PREFIX.length, -1)
      // Buckets are 13-digit zero-padded, so string order is time order: the
      // first bucket after now's ends the walk.
      if (bucket > nowBucket) {
        // Its markers are due at its start or later.
        notePending(horizon, Number(bucket))
        return
      }
      yield bucket
    }
    if (page.cursor === undefined) return
    cursor = page.cursor
  }
}

/** A marker met by the walk: a wake id, or a key that is not one (reported, never skipped silently). */
export type DueMarker =
  | { readonly wakeId: string; readonly key: string }
  | { readonly error: unknown; readonly key: string }

/**
 * The bucket's markers due at `now`, in due order, following the listing's
 * cursor to the end. Ids sort by due time within a bucket, so the first one
 * not due ends the bucket.
 */
export async function* dueMarkers(
  backend: Backend,
  bucket: string,
  now: number,
  pageSize: number,
  horizon?: DueHorizon,
): AsyncGenerator<DueMarker> {
  const prefix = wakeBucketPrefix(bucket)
  let cursor: string | undefined
  for (;;) {
    const page = await backend.list({
      prefix,
      limit: pageSize,
      ...(cursor === undefined ? {} : { cursor }),
    })
    for (const entry of page.entries) {
      const wakeId = entry.key.slice(prefix.length)
      let dueAt: number
      try {
        dueAt = dueAtOfId(wakeId)
      } catch (error) {
        yield {
          key: entry.key,
          error: wakeError(
            'WAKE_CORRUPT',
            'A key in the wake index is not a wake id',
            { key: entry.key },
            error,
          ),
        }
        continue
      }
      if (dueAt > now) {
        notePending(horizon, dueAt)
        return
      }
      yield { wakeId, key: entry.key }
    }
    if (page.cursor === undefined) return
    cursor = page.cursor
  }
}
