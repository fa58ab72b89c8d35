/**
 * `start(item)` for each of `items`, yielded in their order, with at most
 * `window()` started and not yet consumed at any time (at least one;
 * `window` is asked again before each start, so it may shrink as the
 * consumer goes). An error surfaces when its item is reached, in order, never
 * earlier; a consumer that stops early (`break`) leaves the started ones to
 * settle unobserved, without unhandled rejections, and starts nothing more.
 */
export async function* readAhead<T, R>(
  items: readonly T[],
  window: () => number,
  start: (item: T) => Promise<R>,
): AsyncGenerator<R> {
  const started: Array<Promise<R> | undefined> = []
  let next = 0
  for (let i = 0; i < items.length; i++) {
    while (next < items.length && (next === i || next - i < window())) {
      const item = items[next] as T
      // Deferred, so a synchronous throw of `start` also surfaces in order.
      const read = Promise.resolve().then(() => start(item))
      read.catch(() => {}) // awaited, with its error, when its turn comes
      started.push(read)
      next++
    }
    const read = started[i] as Promise<R>
    started[i] = undefined // consumed: nothing keeps its result alive
    yield await read
  }
}

/**
 * `load()` started now for a consumer that may never ask for its result (it
 * stops early): the thunk returns the started promise, whose rejection is
 * then awaited by the consumer, or, if it never asks, not left unhandled.
 */
export function startedNow<R>(load: () => Promise<R>): () => Promise<R> {
  const started = load()
  started.catch(() => {})
  return () => started
}
