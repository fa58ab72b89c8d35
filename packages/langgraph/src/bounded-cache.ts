/** A map of at most `capacity` entries, by key; beyond it the entry set longest ago is dropped. */
export class BoundedCache<V> {
  private readonly entries = new Map<string, V>()
  constructor(private readonly capacity = 1024) {}

  /** The value at `key`, if known. */
  get(key: string): V | undefined {
    return this.entries.get(key)
  }

  /** Remembers `value` at `key`, dropping the oldest entry beyond the capacity. */
  set(key: string, value: V): void {
    this.entries.delete(key)
    this.entries.set(key, value)
    if (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value
      if (oldest !== undefined) this.entries.delete(oldest)
    }
  }

  /** Forgets every entry whose key starts with `prefix` (a deleted thread's ids may be written again). */
  forget(prefix: string): void {
    for (const key of [...this.entries.keys()]) if (key.startsWith(prefix)) this.entries.delete(key)
  }
}
