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
 * The buckets holding markers, in time order, up to now's bucket. One bucket
 * per listing page: a page of several groups could read into many future
 * buckets, and the tick would pay for wakes that are not due.
 */
export async function* dueBuckets(backend: Backend, now: number): AsyncGenerator<string> {
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
      if (bucket > nowBucket) return
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
      if (dueAt > now) return
      yield { wakeId, key: entry.key }
    }
    if (page.cursor === undefined) return
    cursor = page.cursor
  }
}
