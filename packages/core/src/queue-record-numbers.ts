/*
 * The numbers a native daemon queue step needs from a queue record (the
 * tail's next sequence number, the head's head, attempts and iterations, an
 * event's sequence number), read from the record's bytes without decoding
 * its JSON (queue-steps.ts). Its own module so a mutant test can replace the
 * reader (packages/backend-sqlite/test/native-queue.test.ts).
 */

const encoder = new TextEncoder()
const DIGIT_0 = 0x30
const DIGIT_9 = 0x39
const COMMA = 0x2c
const CLOSE = 0x7d
/** Digits of the largest safe integer: longer is never a sequence number. */
const MAX_DIGITS = 16

/**
 * The bytes before each leading number of a record written as the runtime's
 * `encodeRecord` and core's steps write it: `{"format":"<format>","<field>":`,
 * then `,"<field>":` for each further field, in order.
 */
export function numberTemplate(format: string, fields: readonly string[]): Uint8Array[] {
  return fields.map((field, i) =>
    encoder.encode(`${i === 0 ? `{"format":"${format}"` : ''},"${field}":`),
  )
}

/**
 * The leading whole numbers of a queue record written as `template` says
 * (see {@link numberTemplate}; each number followed by `,` or `}`, the
 * record's last byte `}`), read without decoding the JSON: a step needs only
 * these numbers, and decoding the whole record (the tail carries the newest
 * event) cost more than the rest of the step's JavaScript. `null` for
 * anything else (another field order, a number with a sign, a fraction, an
 * exponent, a leading zero or beyond the safe integers, a record cut short):
 * the caller then decodes and checks the record in full, as before.
 */
export function leadingNumbers(
  bytes: Uint8Array,
  template: readonly Uint8Array[],
): number[] | null {
  if (bytes[bytes.length - 1] !== CLOSE) return null
  const numbers: number[] = []
  let at = 0
  for (const literal of template) {
    for (let i = 0; i < literal.length; i++) {
      if (bytes[at + i] !== literal[i]) return null
    }
    at += literal.length
    const start = at
    let value = 0
    for (let byte = bytes[at]; byte !== undefined && byte >= DIGIT_0 && byte <= DIGIT_9; ) {
      value = value * 10 + (byte - DIGIT_0)
      byte = bytes[++at]
    }
    const digits = at - start
    if (digits === 0 || digits > MAX_DIGITS || (digits > 1 && bytes[start] === DIGIT_0)) return null
    if (!Number.isSafeInteger(value) || (bytes[at] !== COMMA && bytes[at] !== CLOSE)) return null
    numbers.push(value)
  }
  return numbers
}
