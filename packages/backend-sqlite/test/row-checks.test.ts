import { crc32 } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { listCheck, ROW_CHECK_CELLS, rowCheck, rowCheckAt } from '../src/row-checks.js'
import { seededRandom } from './helpers.js'

/**
 * The row checks are stored in every row, so their computation may get
 * faster but never change: rows written by earlier versions must verify.
 * The reference here is the checks' definition, spelled out byte by byte and
 * hashed by `zlib.crc32`: a tag byte per cell (0 null, 1 number, 2 text), a
 * number's IEEE-754 bytes little-endian, a text's length as such a number and
 * then its UTF-16 code units, low byte first.
 */
function reference(namespace: string, key: string, cells: readonly unknown[]): number {
  const bytes: number[] = []
  const number = (value: number) => {
    const view = new DataView(new ArrayBuffer(8))
    view.setFloat64(0, value, true)
    for (let i = 0; i < 8; i++) bytes.push(view.getUint8(i))
  }
  for (const cell of [namespace, key, ...cells]) {
    if (cell === null || cell === undefined) bytes.push(0)
    else if (typeof cell === 'number') {
      bytes.push(1)
      number(cell)
    } else {
      const text = typeof cell === 'string' ? cell : `?${String(cell)}`
      bytes.push(2)
      number(text.length)
      for (let i = 0; i < text.length; i++) {
        const unit = text.charCodeAt(i)
        bytes.push(unit & 0xff, unit >>> 8)
      }
    }
  }
  return crc32(Uint8Array.from(bytes))
}

const SPECIAL_NUMBERS = [0, -0, 1, -1, 0.5, 2 ** 53 - 1, -(2 ** 31), 2 ** 32 - 1, 1e300, Number.NaN]
const SPECIAL_TEXTS = ['', 'a', 'é', '漢字', '\u{1F600}', '\ud800', '\u0000', '{"writerId":"w"}']

/** Rows of random cells of every kind the columns hold, and some they should not (damage). */
function randomRows(seed: number, count: number): { key: string; cells: unknown[] }[] {
  const random = seededRandom(seed)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T
  const text = () => {
    let out = ''
    const length = Math.floor(random() * 12)
    for (let i = 0; i < length; i++) out += String.fromCharCode(Math.floor(random() * 0x10000))
    return random() < 0.5 ? out : pick(SPECIAL_TEXTS)
  }
  const cell = (): unknown => {
    const kind = random()
    if (kind < 0.2) return null
    if (kind < 0.4) return pick(SPECIAL_NUMBERS)
    if (kind < 0.6) return (random() - 0.5) * 2 ** Math.floor(random() * 80)
    if (kind < 0.65) return BigInt(Math.floor(random() * 1000))
    return text()
  }
  return Array.from({ length: count }, () => ({
    key: text(),
    cells: Array.from({ length: ROW_CHECK_CELLS }, cell),
  }))
}

/**
 * Every row check and listing check equals the reference, and a value pinned
 * from schema version 2's byte-wise implementation, for `check` standing for
 * `rowCheck` (the mutant tests pass broken ones).
 */
function assertChecksMatchReference(check: typeof rowCheck): void {
  for (const { key, cells } of randomRows(34, 2000)) {
    expect(check('ns', key, cells), JSON.stringify([key, cells.map(String)])).toBe(
      reference('ns', key, cells),
    )
  }
  const cells = ['v-1', 1, '{"writerId":"w-1234567890"}', 1764750000123.5, 1024, 3456789012]
  const row = [...cells, null, null, null, null, 0]
  // Computed by the byte-wise CRC of schema version 2 (commit b81441a).
  expect(check('default', 'k/0001', row)).toBe(1962730557)
}

describe('sqlite row checks', () => {
  it('compute the checks of schema version 2, byte for byte, for every kind of cell', () => {
    assertChecksMatchReference(rowCheck)
    for (const { key, cells } of randomRows(35, 200)) {
      const [version, , , updatedAt, size] = cells
      expect(listCheck('ns', key, version, size, updatedAt)).toBe(
        reference('ns', key, [version, size, updatedAt]),
      )
      // A read checks the cells in place, after the cells a statement selects first.
      expect(rowCheckAt('ns', key, ['rowid', ...cells, 'check'], 1)).toBe(
        reference('ns', key, cells),
      )
    }
  })

  it('catches mutants that change the bytes hashed (the reference test fails on each)', () => {
    const lowBytesOnly: typeof rowCheck = (namespace, key, cells) =>
      rowCheck(
        namespace,
        key,
        cells.map((cell) =>
          typeof cell === 'string'
            ? cell.replace(/[^\0-\xff]/g, (c) => String.fromCharCode(c.charCodeAt(0) & 0xff))
            : cell,
        ),
      )
    const bigEndianNumbers: typeof rowCheck = (namespace, key, cells) =>
      rowCheck(
        namespace,
        key,
        cells.map((cell) => {
          if (typeof cell !== 'number') return cell
          const view = new DataView(new ArrayBuffer(8))
          view.setFloat64(0, cell, false)
          return view.getFloat64(0, true)
        }),
      )
    const lastCellDropped: typeof rowCheck = (namespace, key, cells) =>
      rowCheck(namespace, key, cells.slice(0, -1))
    for (const mutant of [lowBytesOnly, bigEndianNumbers, lastCellDropped]) {
      expect(() => assertChecksMatchReference(mutant), mutant.name).toThrow(/expected/)
    }
  })
})
