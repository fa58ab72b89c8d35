import type { KeyState } from './record-codec.js'
import type { RecordCondition } from './record-store.js'

const EMPTY = new Uint8Array(0)

/** A key's state as this instance last saw it, and the condition that proves it is still current. */
export interface CachedKeyState {
  /** The state, with its value dropped: a put replaces the value and a delete drops it, neither reads it. */
  readonly state: KeyState
  readonly condition: RecordCondition
}

/**
 * A bounded, least-recently-used map of the states this backend instance last
 * read or wrote, so that a `put` or `delete` can go straight to its conditional write.
 *
 * It is only a guess. Nothing taken from it is ever returned to a caller or
 * trusted on its own: the write is conditional on the cached version, so a
 * stale or tampered record fails the condition and the put falls back to a
 * fresh read. That is only sound on stores whose version changes whenever the
 * stored bytes change, whoever changes them (see
 * `RecordStore.versionChangesWithBytes`).
 */
export class PutStateCache {
  readonly #entries = new Map<string, CachedKeyState>()
  readonly #capacity: number

  /** @param capacity How many keys to remember; 0 disables the cache. */
  constructor(capacity: number) {
    this.#capacity = capacity
  }

  /** Takes the key's entry out of the cache: a failed attempt must not reuse it. */
  take(key: string): CachedKeyState | undefined {
    const entry = this.#entries.get(key)
    if (entry !== undefined) this.#entries.delete(key)
    return entry
  }

  /** Remembers the key's current state as just read or written. */
  remember(key: string, state: KeyState, condition: RecordCondition): void {
    if (this.#capacity === 0) return
    this.#entries.delete(key)
    this.#entries.set(key, { state: { ...state, value: EMPTY }, condition })
    if (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.keys().next()
      if (oldest.done !== true) this.#entries.delete(oldest.value)
    }
  }

  /** Forgets the key, after an outcome that leaves its state unknown. */
  forget(key: string): void {
    this.#entries.delete(key)
  }

  /** Forgets everything. */
  clear(): void {
    this.#entries.clear()
  }
}
