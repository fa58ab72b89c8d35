/**
 * Listing order is ascending UTF-8 byte order. JavaScript's `<` compares
 * UTF-16 code units, which differs for astral characters (U+10000 and up,
 * stored as surrogates 0xD800–0xDFFF) against U+E000–U+FFFF: in UTF-16 the
 * astral character sorts first, in UTF-8 (F0.. against EE/EF..) it sorts last.
 */

/**
 * Compares two strings by their UTF-8 bytes without encoding them: code-point
 * order equals UTF-8 byte order, so walk code points.
 * Returns a negative number, zero or a positive number.
 */
export function compareUtf8(a: string, b: string): number {
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
