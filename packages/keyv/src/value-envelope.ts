import { AgentStateError } from '@agent-state/core'

/**
 * What the store keeps per key: the value Keyv handed over and, with a TTL,
 * when it expires (ms since the epoch, by this process's `Date.now()`, the
 * clock Keyv itself uses). Format version 1, JSON:
 * `{"v":1,"e":<expiresAt>|null,"t":"s"|"j","d":<data>}` where `t: "s"` is a
 * string kept verbatim (Keyv's default serializer hands over strings) and
 * `t: "j"` any other JSON-compatible value.
 */
export interface Envelope {
  readonly expiresAt: number | null
  readonly value: unknown
}

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/** Encodes a value and its expiry. */
export function encodeEnvelope(value: unknown, expiresAt: number | null): Uint8Array {
  const body =
    typeof value === 'string'
      ? { v: 1, e: expiresAt, t: 's', d: value }
      : { v: 1, e: expiresAt, t: 'j', d: value === undefined ? null : value }
  return encoder.encode(JSON.stringify(body))
}

/** Decodes a stored envelope; anything else is `CORRUPT` (never read as missing). */
export function decodeEnvelope(bytes: Uint8Array, key: string): Envelope {
  let parsed: unknown
  try {
    parsed = JSON.parse(decoder.decode(bytes))
  } catch (error) {
    throw new AgentStateError('CORRUPT', 'A Keyv entry is not a valid envelope', {
      context: { key },
      cause: error,
    })
  }
  const record = parsed as { v?: unknown; e?: unknown; t?: unknown; d?: unknown }
  if (typeof parsed !== 'object' || parsed === null || record.v !== 1) {
    throw new AgentStateError(
      record?.v !== undefined && typeof record.v === 'number' ? 'INCOMPATIBLE_SCHEMA' : 'CORRUPT',
      'A Keyv entry has an unknown envelope version',
      { context: { key, version: record?.v ?? null } },
    )
  }
  const expiresOk = record.e === null || (typeof record.e === 'number' && Number.isFinite(record.e))
  const typeOk = (record.t === 's' && typeof record.d === 'string') || record.t === 'j'
  if (!expiresOk || !typeOk || !('d' in record)) {
    throw new AgentStateError('CORRUPT', 'A Keyv entry envelope is malformed', { context: { key } })
  }
  return { expiresAt: record.e as number | null, value: record.d }
}
