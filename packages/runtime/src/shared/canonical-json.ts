import { createHash } from 'node:crypto'
import { z } from 'zod'

/** A plain JSON value: what snapshots, summaries and resume input may hold. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | readonly JsonValue[]
  | { readonly [key: string]: JsonValue }

/** Schema of a {@link JsonValue} (finite numbers only). */
export const jsonValueSchema: z.ZodType<JsonValue> = z.json() as z.ZodType<JsonValue>

/**
 * JSON with object keys sorted by code point at every level and no
 * whitespace, so equal values always give equal bytes and equal checksums.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value))
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) {
      const field = (value as Record<string, unknown>)[key]
      if (field !== undefined) out[key] = sortKeys(field)
    }
    return out
  }
  return value
}

/** `sha256:` plus the hex SHA-256 of the canonical JSON of `value`. */
export function checksumOf(value: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex')}`
}

const utf8 = new TextEncoder()

/** The size of `value` as JSON in UTF-8 bytes: what the size limits of payloads measure. */
export function jsonByteLength(value: unknown): number {
  return utf8.encode(JSON.stringify(value)).byteLength
}
