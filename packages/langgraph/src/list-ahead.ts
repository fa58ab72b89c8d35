/**
 * `pages` with its first page requested now: `pages` yields it and the rest
 * (an error surfaces when consumed); `drop()` ends the listing unconsumed.
 */
export function ahead<T>(pages: AsyncGenerator<T>): {
  pages: AsyncIterable<T>
  drop(): Promise<void>
} {
  const first = pages.next()
  first.catch(() => {})
  async function* resumed(): AsyncGenerator<T> {
    try {
      const head = await first
      if (head.done === true) return
      yield head.value
      yield* pages
    } finally {
      await pages.return(undefined)
    }
  }
  return {
    pages: resumed(),
    drop: async () => {
      await pages.return(undefined)
    },
  }
}
