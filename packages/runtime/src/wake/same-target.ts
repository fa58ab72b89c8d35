/**
 * Wakes of one worker met by one tick (docs/runtime/wakes.md, A tick: one
 * worker's wakes one after another). A timeout and an event of the same
 * worker due together would otherwise run side by side: the loser's resume
 * is `CONCURRENT_RESUME` and its wake waits out the firing lease's TTL before
 * it is found stale. Here a wake waits for the tick's earlier-due wakes of
 * its worker to settle, so it then finds the outcome at once (cancelled by
 * the winner's resume, or stale). Kept apart from the firing so it can be
 * reviewed (and broken in the tests) on its own.
 */

import type { WakeTarget } from './wake-records.js'

/** The tick's wakes per worker, by their place in the due order. */
export interface SameTargetGate {
  /**
   * Notes the wake in slot `slot` (its place in the tick's due order) as one
   * of `target`'s; returns what to call once it settled. Call it before the
   * wake's claim is reported settled, so every earlier-due wake has entered
   * by the time `earlier` is asked.
   */
  enter(target: WakeTarget, slot: number): () => void
  /**
   * Settles once every earlier-due wake of `target` in the tick settled, or
   * `null` when there is none: ask it after every earlier claim settled.
   */
  earlier(target: WakeTarget, slot: number): Promise<void> | null
}

/** A gate for one tick. Only worker targets are ordered: daemon wakes (enqueues) do not conflict. */
export function sameTargetGate(): SameTargetGate {
  const byTarget = new Map<string, Map<number, Promise<void>>>()
  const keyOf = (target: WakeTarget): string | null =>
    target.kind === 'worker' ? target.workerId : null
  return {
    enter(target, slot) {
      const key = keyOf(target)
      if (key === null) return () => undefined
      let settle!: () => void
      const settled = new Promise<void>((resolve) => {
        settle = resolve
      })
      let slots = byTarget.get(key)
      if (slots === undefined) {
        slots = new Map()
        byTarget.set(key, slots)
      }
      slots.set(slot, settled)
      return settle
    },
    earlier(target, slot) {
      const key = keyOf(target)
      if (key === null) return null
      const before = [...(byTarget.get(key) ?? new Map<number, Promise<void>>())]
        .filter(([other]) => other < slot)
        .map(([, settled]) => settled)
      return before.length === 0 ? null : Promise.all(before).then(() => undefined)
    },
  }
}
