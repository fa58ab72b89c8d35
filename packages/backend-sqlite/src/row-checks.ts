import { crc32 } from 'node:zlib'

/**
 * The integrity checks every row carries (schema version 2). SQLite does not
 * notice a damaged page by itself, so each row stores CRC-32s of what it
 * holds, and every read recomputes them:
 * - `value_crc`: the value bytes (0 for a deleted key, the CRC of nothing);
 * - `row_check`: namespace, key and every other column of the row, with
 *   `value_crc` standing for the value, so `head`, `getLease` and writes
 *   verify the row without reading the bytes of the value;
 * - `list_check`: namespace, key, version, size, updated_at, carried in the
 *   listing index so a listing verifies what it returns from the index alone.
 * The namespace and key are those asked for, not read back, so a damaged
 * index that leads to another key's row fails the check too.
 * All are CRC-32 (IEEE): the value through `zlib.crc32`, the cells through
 * `addCell`, a JS CRC-32 over a typed encoding of the cells, which
 * avoids building a string per row (listing verifies one check per entry).
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

const TABLE = (() => {
  const table = new Int32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c
  }
  return table
})()
const DOUBLE = new Float64Array(1)
const DOUBLE_BYTES = new Uint8Array(DOUBLE.buffer)

function addByte(crc: number, byte: number): number {
  return (TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8)
}

function addDouble(crc: number, value: number): number {
  DOUBLE[0] = value
  let next = crc
  for (let i = 0; i < 8; i++) next = addByte(next, DOUBLE_BYTES[i] as number)
  return next
}

/**
 * Feeds one cell into a CRC: a type tag, then a number's 8 IEEE-754 bytes,
 * or a string's length and UTF-16 code units. The tag and the length keep
 * neighbouring cells apart, so no two different rows encode alike.
 */
function addCell(crc: number, cell: unknown): number {
  if (cell === null || cell === undefined) return addByte(crc, 0)
  if (typeof cell === 'number') return addDouble(addByte(crc, 1), cell)
  const text = typeof cell === 'string' ? cell : `?${String(cell)}`
  let next = addDouble(addByte(crc, 2), text.length)
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    next = addByte(addByte(next, unit & 0xff), unit >>> 8)
  }
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
  let crc = addCell(addCell(-1, namespace), key)
  for (let i = 0; i < cells.length; i++) crc = addCell(crc, cells[i])
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
