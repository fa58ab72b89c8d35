import type { Backend } from '@agent-state/core'
import { WAKES_DUE_PREFIX } from '../shared/layout.js'
import { dueAtOfId } from './wake-records.js'

/**
 * The change notification of the due-time index (docs/runtime/wakes.md,
 * Ticks woken by change notification): what lets a dispatcher tick as soon
 * as a wake is registered instead of at its next interval. Kept apart from
 * the dispatcher's timer so it can be reviewed (and broken in the tests) on
 * its own.
 */

/** What a hint of the due-time index says about when a tick is wanted. */
export type DueHint =
  /** A marker of wake `wakeId`, due at `dueAt`, was written or deleted. */
  | { readonly kind: 'wake'; readonly wakeId: string; readonly dueAt: number }
  /**
   * Something under the index changed and the backend cannot say what (a
   * `prefix` or `resync` hint, a key that is not a marker), or the watch
   * ended: only a tick can tell.
   */
  | { readonly kind: 'unknown' }

/** A watch of the due-time index; see {@link openDueWatch}. */
export interface DueWatch {
  /** Whether hints arrive: the backend claims change notification and the watch has not ended. */
  readonly notified: boolean
  /** Resolves once the watch is established (at once when not notified). */
  readonly established: Promise<void>
}

/**
 * Watches `wakes/due/` with the backend's change notification and calls
 * `onHint` for every hint after the first (the first `resync` only says the
 * watch is established: every marker written from then on is hinted). Where
 * the backend claims none it watches nothing (`notified: false`): the
 * dispatcher's interval is all there is. A watch that ends while `signal` is
 * not aborted (a dropped connection the backend gave up on, a closed
 * backend) turns `notified` off and calls `onHint` once with `unknown`, so
 * the dispatcher ticks and falls back to its interval.
 */
export function openDueWatch(
  backend: Backend,
  signal: AbortSignal,
  onHint: (hint: DueHint) => void,
): DueWatch {
  const watch = backend.watch
  if (backend.capabilities.changeNotification === undefined || typeof watch !== 'function') {
    return { notified: false, established: Promise.resolve() }
  }
  let notified = true
  let markEstablished: () => void = () => undefined
  const established = new Promise<void>((resolve) => {
    markEstablished = resolve
  })
  void (async () => {
    let seen = false
    try {
      for await (const hint of watch.call(backend, WAKES_DUE_PREFIX, { signal })) {
        if (seen) onHint(readHint(hint))
        seen = true
        markEstablished()
      }
    } catch {
      // A closed backend: the interval's ticks report it.
    }
    markEstablished()
    if (!signal.aborted) {
      notified = false
      onHint({ kind: 'unknown' })
    }
  })()
  return {
    get notified() {
      return notified
    },
    established,
  }
}

/**
 * How long from now a hint wants a tick, or `null` for no tick: a wake this
 * dispatcher's ticks met (its own marker delete, or one it found busy) or
 * one due only after the armed tick, `horizonMs` from now (that tick will
 * meet it) wants none; anything the hint cannot name wants one now. The
 * horizon may be far off (an idle dispatcher sleeps until its next known
 * wake or its ceiling), so a wake due before it must arm the timer.
 */
export function tickDelayOf(
  hint: DueHint,
  met: ReadonlySet<string>,
  now: number,
  horizonMs: number,
): number | null {
  if (hint.kind !== 'wake') return 0
  if (met.has(hint.wakeId)) return null
  const delay = Math.max(0, hint.dueAt - now)
  return delay < horizonMs ? delay : null
}

/** What one backend hint says: a marker key names its wake and due time; anything else is unknown. */
function readHint(hint: { kind: string; key?: string }): DueHint {
  if (hint.kind !== 'key' || hint.key === undefined) return { kind: 'unknown' }
  const wakeId = hint.key.slice(hint.key.lastIndexOf('/') + 1)
  try {
    return { kind: 'wake', wakeId, dueAt: dueAtOfId(wakeId) }
  } catch {
    return { kind: 'unknown' }
  }
}
