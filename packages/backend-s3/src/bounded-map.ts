/**
 * A bounded map in insertion order, the oldest entries going first: the
 * record store's ETag caches (ETags never repeat, so entries never go stale,
 * only old). Values larger than 1/64 of the byte budget are not kept.
 */
export class BoundedMap<V> {
  private readonly map = new Map<string, V>()
  private bytes = 0
  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
    private readonly sizeOf: (value: V) => number,
  ) {}
  get(key: string): V | undefined {
    return this.map.get(key)
  }
  set(key: string, value: V): void {
    const size = this.sizeOf(value)
    if (size > this.maxBytes / 64 || this.map.has(key)) return
    this.map.set(key, value)
    this.bytes += size
    while (this.map.size > this.maxEntries || this.bytes > this.maxBytes) {
      const oldest = this.map.entries().next().value
      if (oldest === undefined) break
      this.map.delete(oldest[0])
      this.bytes -= this.sizeOf(oldest[1])
    }
  }
  clear(): void {
    this.map.clear()
    this.bytes = 0
  }
}
