import { AssertionError } from 'node:assert'
import { type AgentStateError, type ErrorCode, isAgentStateError } from '@agent-state/core'

/**
 * Small assertion helpers that throw plain `AssertionError`s, so checks run
 * the same inside vitest and when called directly (the mutant tests, the CLI).
 */

/** Fails with `message`. */
export function fail(message: string): never {
  throw new AssertionError({ message })
}

/** Fails unless `condition` holds. */
export function ensure(condition: unknown, message: string): asserts condition {
  if (!condition) fail(message)
}

/** Fails unless `actual` and `expected` are equal (`Object.is`). */
export function ensureEqual<T>(actual: T, expected: T, what: string): void {
  if (!Object.is(actual, expected)) {
    fail(`${what}: expected ${show(expected)}, got ${show(actual)}`)
  }
}

/** Fails unless the JSON forms of `actual` and `expected` are equal. */
export function ensureSame(actual: unknown, expected: unknown, what: string): void {
  const a = show(actual)
  const e = show(expected)
  if (a !== e) fail(`${what}: expected ${e}, got ${a}`)
}

/** Fails unless the two byte arrays are equal. */
export function ensureBytes(
  actual: Uint8Array | undefined,
  expected: Uint8Array,
  what: string,
): void {
  if (actual === undefined) fail(`${what}: expected ${expected.byteLength} bytes, got nothing`)
  if (actual.byteLength !== expected.byteLength) {
    fail(`${what}: expected ${expected.byteLength} bytes, got ${actual.byteLength}`)
  }
  for (let i = 0; i < expected.byteLength; i++) {
    if (actual[i] !== expected[i]) fail(`${what}: bytes differ at offset ${i}`)
  }
}

/** Awaits `promise` and fails unless it rejects with an `AgentStateError` of `code`. */
export async function rejectsWith(
  promise: Promise<unknown>,
  code: ErrorCode,
  what: string,
): Promise<AgentStateError> {
  let result: unknown
  try {
    result = await promise
  } catch (error) {
    if (isAgentStateError(error, code)) {
      // Every contract error says what went wrong: an empty message leaves a log line bare.
      if (typeof error.message !== 'string' || error.message.trim() === '') {
        fail(`${what}: ${code} with an empty message`)
      }
      return error
    }
    const got = isAgentStateError(error) ? error.code : String(error)
    fail(`${what}: expected ${code}, got ${got}`)
  }
  fail(`${what}: expected ${code}, but it resolved ${show(result)}`)
}

function show(value: unknown): string {
  if (value instanceof Uint8Array) return `<${value.byteLength} bytes>`
  try {
    const text = JSON.stringify(value)
    return text === undefined ? String(value) : text.length > 300 ? `${text.slice(0, 300)}…` : text
  } catch {
    return String(value)
  }
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** UTF-8 bytes of `text`. */
export function bytes(text: string): Uint8Array {
  return encoder.encode(text)
}

/** Text of UTF-8 `data`. */
export function text(data: Uint8Array): string {
  return decoder.decode(data)
}
