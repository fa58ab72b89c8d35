/**
 * Listing order is ascending UTF-8 byte order. JavaScript's `<` compares
 * UTF-16 code units, which differs for astral characters (U+10000 and up,
 * stored as surrogates 0xD800–0xDFFF) against U+E000–U+FFFF: in UTF-16 the
 * astral character sorts first, in UTF-8 (F0.. against EE/EF..) it sorts last.
 */

/**
 * Code units where UTF-16 order and UTF-8 byte order can disagree: the first
 * differing units must be a surrogate against one of U+E000–U+FFFF.
 */
const ABOVE_SURROGATES = /[\ue000-\uffff]/

/**
 * Compares two strings by their UTF-8 bytes without encoding them.
 * Returns a negative number, zero or a positive number.
 *
 * It runs for every key a listing emits or a sorted index searches, so it
 * takes the engine's native UTF-16 comparison when that is sure to agree:
 * when `a < b` in UTF-16 and `b` has no unit in U+E000–U+FFFF, the first
 * differing units cannot be the one pair the two orders rank differently
 * (symmetrically for `a > b`). Otherwise it walks code points, whose order is
 * UTF-8 byte order.
 */
export function compareUtf8(a: string, b: string): number {
  if (a < b) return ABOVE_SURROGATES.test(b) ? compareCodePoints(a, b) : -1
  if (a > b) return ABOVE_SURROGATES.test(a) ? compareCodePoints(a, b) : 1
  return 0
}

function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    // Both below the surrogate range, or both above it: UTF-16 order is code-point order.
    const xSurrogate = x >= 0xd800 && x <= 0xdfff
    const ySurrogate = y >= 0xd800 && y <= 0xdfff
    if (xSurrogate === ySurrogate) return x - y
    // A surrogate (astral code point) sorts after any BMP code point it is compared with.
    return xSurrogate ? 1 : -1
  }
  return a.length - b.length
}

/** Sorts a copy of `keys` in UTF-8 byte order. */
export function sortUtf8(keys: Iterable<string>): string[] {
  return [...keys].sort(compareUtf8)
}
