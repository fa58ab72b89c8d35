/**
 * The tick's concurrency and its ordering guarantee (docs/runtime/wakes.md,
 * A tick), kept apart from the firing so each can be reviewed (and broken in
 * the tests) on its own: wakes are started in due order, at most `limit` at
 * once, and a wake's firing decision waits until every earlier-due wake of
 * the tick has settled its claim (taken its lease, or found it held).
 */

/** A wake's place in the claim order. */
export interface ClaimTurn {
  /** Tells later wakes this wake's claim settled. Idempotent. */
  readonly claimed: () => void
  /** Settles once every earlier wake's claim settled: await it before the firing decision. */
  readonly before: Promise<void>
}

/**
 * Calls `work` for each item of `items` in order, at most `limit` calls
 * pending at once (the next item is read only when a call finished), and
 * resolves once every call finished. Each call gets its {@link ClaimTurn};
 * a call that finishes without calling `claimed` is taken as claimed. `work`
 * must not reject (report errors through its own result). If iterating
 * `items` throws, the calls already started are waited for, then it rethrows.
 */
export async function inDueOrder<T>(
  items: AsyncIterable<T>,
  limit: number,
  work: (item: T, turn: ClaimTurn) => Promise<void>,
): Promise<void> {
  const running = new Set<Promise<void>>()
  let earlierClaimed: Promise<void> = Promise.resolve()
  try {
    for await (const item of items) {
      while (running.size >= limit) await Promise.race(running)
      let claimed!: () => void
      const own = new Promise<void>((resolve) => {
        claimed = resolve
      })
      const before = earlierClaimed
      earlierClaimed = before.then(() => own)
      const task: Promise<void> = work(item, { claimed, before }).finally(() => {
        claimed()
        running.delete(task)
      })
      running.add(task)
    }
  } finally {
    await Promise.all(running)
  }
}
