/**
 * Private copies of values without an `ArrayBuffer` per copy. Allocating an
 * `ArrayBuffer` costs far more than copying a small value (about 0.5–0.9 µs
 * against 0.1 µs for 1 KiB on the project's VM), so, like Node's `Buffer`
 * pool, small copies are views into a shared slab: each copy is its own
 * disjoint range, so mutating one changes no other copy, but its `.buffer` is
 * the slab (use `byteOffset`/`byteLength` with it). A retained copy keeps at
 * most one slab alive, so the overhead is bounded by the slab size.
 *
 * The contract requires two copies (its `get returns a copy unaffected by
 * later buffer writes` check): the bytes a `put` stores must not alias the
 * caller's buffer (a caller may reuse it), and the bytes a `get` returns must
 * not alias the stored ones (a caller may mutate them). Each side has its own
 * pool, so a caller's retained copies never pin the slabs of stored values
 * and the reverse.
 */

/** A source of private copies (see the module comment). */
export type CopyValue = (value: Uint8Array) => Uint8Array

/**
 * A pool of `slabBytes` slabs that serves values of at most `maxPooledBytes`
 * (larger and empty ones get their own buffer).
 */
export function createValuePool(slabBytes: number, maxPooledBytes: number): CopyValue {
  let slab = new ArrayBuffer(slabBytes)
  let used = 0
  return (value) => {
    const size = value.byteLength
    // A copy, not `value.slice()`: a Buffer's `slice` is a view of the caller's memory.
    if (size > maxPooledBytes || size === 0) return new Uint8Array(value)
    if (used + size > slabBytes) {
      slab = new ArrayBuffer(slabBytes)
      used = 0
    }
    const copy = new Uint8Array(slab, used, size)
    // Keep every view 8-byte aligned, so a caller may build wider views on it.
    used += (size + 7) & ~7
    copy.set(value)
    return copy
  }
}

/** Copies handed out by `get`: 32 KiB slabs, values up to 4 KiB. */
export const copyOut: CopyValue = createValuePool(32 * 1024, 4 * 1024)

/**
 * Copies a `put` stores: 16 KiB slabs, values up to 2 KiB. A stored value
 * lives as long as its key holds it, so the slab is smaller than `copyOut`'s:
 * a live value of at most 2 KiB pins at most one 16 KiB slab (the same kind of
 * bound as Node's `Buffer` pool, which shares 8 KiB slabs up to 4 KiB).
 */
export const copyIn: CopyValue = createValuePool(16 * 1024, 2 * 1024)
