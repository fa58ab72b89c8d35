import { crc32 } from 'node:zlib'

/**
 * The integrity checks every row carries (schema version 2, `meta_check`
 * since 3). SQLite does not notice a damaged page by itself, so each row
 * stores CRC-32s of what it holds, and every read recomputes them:
 * - `value_crc`: the value bytes (0 for a deleted key, the CRC of nothing);
 * - `row_check`: namespace, key and every other column of the row, with
 *   `value_crc` standing for the value, so `getLease` and writes verify the
 *   row without reading the bytes of the value;
 * - `meta_check`: namespace, key and the cells of a value's meta (version,
 *   writer, updated_at, size, value_crc), so `get` and `head` read and verify
 *   6 cells (plus the value) instead of 12: fewer cells was most of what a
 *   `get` cost over the raw `SELECT`. A row whose `meta_check` does not match
 *   is read again whole and verified by its `row_check` (see `row-codec.ts`);
 * - `list_check`: namespace, key, version, size, updated_at, carried in the
 *   listing index so a listing verifies what it returns from the index alone.
 * The namespace and key are those asked for, not read back, so a damaged
 * index that leads to another key's row fails the check too.
 * All are CRC-32 (IEEE): the value through `zlib.crc32`, the cells through
 * `addCell`, a JS CRC-32 (slicing-by-8) over a typed encoding of the cells,
 * which avoids building a string or a buffer per row (listing verifies one
 * check per entry; packing the cells into a buffer for `zlib.crc32` measured
 * slower than the JS, the native call costing more than the ~300 bytes).
 * CRC-32 detects any damage of up to 32 adjacent bits and misses random
 * damage with probability 2^-32: it guards against disk and file damage, not
 * against someone forging rows.
 */

/**
 * The cells covered by `row_check`, in this column order: the order of the
 * first {@link ROW_CHECK_CELLS} cells of every state read (see `statements.ts`).
 */
export const ROW_CHECK_COLUMNS =
  'version, revision, writer, updated_at, size, value_crc, lease_holder, lease_token, lease_ttl_ms, lease_expires_at, fence'

/** How many cells {@link ROW_CHECK_COLUMNS} names. */
export const ROW_CHECK_CELLS = 11

/**
 * The cells covered by `meta_check`, in this column order: the first
 * {@link META_CHECK_CELLS} cells of `get`'s and `head`'s reads.
 */
export const META_CHECK_COLUMNS = 'version, writer, updated_at, size, value_crc'

/** How many cells {@link META_CHECK_COLUMNS} names. */
export const META_CHECK_CELLS = 5

/**
 * Slicing-by-8 tables of the reflected CRC-32 (IEEE) polynomial:
 * `TABLES[0]` is the byte-wise table, `TABLES[t][n]` the CRC of byte `n`
 * followed by `t` zero bytes, so eight bytes (a number cell) take eight
 * lookups and no loop, and a UTF-16 code unit takes two. Same register, same
 * bytes in the same order as a byte-wise CRC: the checks are unchanged, only
 * computed with fewer steps (the byte-wise loop was the largest JS cost of a
 * `get`; see the package README).
 */
const TABLES = (() => {
  const tables = Array.from({ length: 8 }, () => new Int32Array(256))
  const [first] = tables as [Int32Array]
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    first[n] = c
  }
  for (let t = 1; t < 8; t++) {
    const previous = tables[t - 1] as Int32Array
    const table = tables[t] as Int32Array
    for (let n = 0; n < 256; n++) {
      const c = previous[n] as number
      table[n] = (first[c & 0xff] as number) ^ (c >>> 8)
    }
  }
  return tables as [
    Int32Array,
    Int32Array,
    Int32Array,
    Int32Array,
    Int32Array,
    Int32Array,
    Int32Array,
    Int32Array,
  ]
})()
const [T0, T1, T2, T3, T4, T5, T6, T7] = TABLES
/** A number cell's bytes: IEEE-754, little-endian on every host. */
const DOUBLE = new DataView(new ArrayBuffer(8))

function addByte(crc: number, byte: number): number {
  return (T0[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8)
}

function addDouble(crc: number, value: number): number {
  DOUBLE.setFloat64(0, value, true)
  const low = DOUBLE.getInt32(0, true) ^ crc
  const high = DOUBLE.getInt32(4, true)
  return (
    (T7[low & 0xff] as number) ^
    (T6[(low >>> 8) & 0xff] as number) ^
    (T5[(low >>> 16) & 0xff] as number) ^
    (T4[low >>> 24] as number) ^
    (T3[high & 0xff] as number) ^
    (T2[(high >>> 8) & 0xff] as number) ^
    (T1[(high >>> 16) & 0xff] as number) ^
    (T0[high >>> 24] as number)
  )
}

/** One UTF-16 code unit, low byte first. */
function addUnit(crc: number, unit: number): number {
  const next = crc ^ unit
  return (T1[next & 0xff] as number) ^ (T0[(next >>> 8) & 0xff] as number) ^ (crc >>> 16)
}

/**
 * Feeds one cell into a CRC: a type tag, then a number's 8 IEEE-754 bytes
 * (little-endian), or a string's length (as a number) and UTF-16 code units,
 * low byte first. The tag and the length keep neighbouring cells apart, so no
 * two different rows encode alike.
 */
function addCell(crc: number, cell: unknown): number {
  if (cell === null || cell === undefined) return addByte(crc, 0)
  if (typeof cell === 'number') return addDouble(addByte(crc, 1), cell)
  const text = typeof cell === 'string' ? cell : `?${String(cell)}`
  let next = addDouble(addByte(crc, 2), text.length)
  for (let i = 0; i < text.length; i++) next = addUnit(next, text.charCodeAt(i))
  return next
}

/** The final form of a CRC-32 register: an unsigned integer. */
const finish = (crc: number): number => (crc ^ -1) >>> 0

/** The CRC-32 of a value's bytes, as stored in `value_crc`. */
export function valueCrc(value: Uint8Array | null): number {
  return value === null ? 0 : crc32(value)
}

/**
 * `row_check` of a row whose {@link ROW_CHECK_COLUMNS} cells are `cells`.
 * Numbers are hashed as their exact IEEE-754 bytes, so a row read back gives
 * the same check as the parameters it was written with.
 */
export function rowCheck(namespace: string, key: string, cells: readonly unknown[]): number {
  return cellsCheck(namespace, key, cells, 0, cells.length)
}

/**
 * {@link rowCheck} of the {@link ROW_CHECK_CELLS} cells of `row` from
 * `offset`: a read checks the cells where the statement returned them,
 * without copying them out first.
 */
export function rowCheckAt(
  namespace: string,
  key: string,
  row: readonly unknown[],
  offset: number,
): number {
  return cellsCheck(namespace, key, row, offset, Math.min(row.length, offset + ROW_CHECK_CELLS))
}

/** `meta_check` of a row whose {@link META_CHECK_COLUMNS} cells are `cells`. */
export function metaCheck(namespace: string, key: string, cells: readonly unknown[]): number {
  return cellsCheck(namespace, key, cells, 0, cells.length)
}

/** {@link metaCheck} of the {@link META_CHECK_CELLS} cells of `row` from `offset`. */
export function metaCheckAt(
  namespace: string,
  key: string,
  row: readonly unknown[],
  offset: number,
): number {
  return cellsCheck(namespace, key, row, offset, Math.min(row.length, offset + META_CHECK_CELLS))
}

/**
 * The `meta_check` the migration to schema version 3 gives a row: the check
 * of its meta cells when its stored `row_check` verifies its row cells, else
 * `null`, so a row damaged before the migration is not sealed by a check
 * computed over the damage (its reads fall back to `row_check`: `CORRUPT`).
 */
export function migratedMetaCheck(
  namespace: string,
  key: string,
  storedRowCheck: unknown,
  metaCells: readonly unknown[],
  rowCells: readonly unknown[],
): number | null {
  if (storedRowCheck !== rowCheck(namespace, key, rowCells)) return null
  return metaCheck(namespace, key, metaCells)
}

function cellsCheck(
  namespace: string,
  key: string,
  cells: readonly unknown[],
  start: number,
  end: number,
): number {
  let crc = addCell(addCell(-1, namespace), key)
  for (let i = start; i < end; i++) crc = addCell(crc, cells[i])
  return finish(crc)
}

/** `list_check` of a row (also computed for deleted keys, which no listing shows). */
export function listCheck(
  namespace: string,
  key: string,
  version: unknown,
  size: unknown,
  updatedAt: unknown,
): number {
  const crc = addCell(addCell(addCell(-1, namespace), key), version)
  return finish(addCell(addCell(crc, size), updatedAt))
}
