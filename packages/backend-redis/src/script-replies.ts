import { AgentStateError, type Lease, type ValueMeta, type WriterIdentity } from '@agent-state/core'

/*
 * Decoding of script replies and stored fields into contract values and
 * contract errors. A reply or field that does not decode is CORRUPT.
 */

/** A CORRUPT error for a key's record. */
export function corrupt(key: string, problem: string): AgentStateError {
  return new AgentStateError(
    'CORRUPT',
    `Redis record of key ${JSON.stringify(key)} is corrupt: ${problem}`,
    {
      context: { key, problem },
    },
  )
}

/** A stored integer field; CORRUPT when it is not one. */
export function toNumber(key: string, text: unknown, field: string): number {
  const n = typeof text === 'string' && text !== '' ? Number(text) : Number.NaN
  if (!Number.isSafeInteger(n)) throw corrupt(key, `field ${field} is not an integer`)
  return n
}

/** Writer identity JSON from a record; null when absent, CORRUPT when unreadable. */
export function parseWriter(
  key: string,
  text: string | Buffer | null | undefined,
): WriterIdentity | null {
  if (text === null || text === undefined || text.length === 0) return null
  try {
    const parsed: unknown = JSON.parse(text.toString())
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      typeof (parsed as WriterIdentity).writerId === 'string'
    ) {
      return parsed as WriterIdentity
    }
  } catch {
    // reported below
  }
  throw corrupt(key, 'writer metadata is not valid JSON')
}

/**
 * The value size a version carries (`<revision>.<random>.<size>`, written by
 * 0.2 and later), or `undefined` for a 0.1 version (`<revision>.<random>`).
 */
export function sizeOfVersion(version: string): number | undefined {
  const last = version.lastIndexOf('.')
  if (last <= 0 || version.indexOf('.') === last) return undefined
  const part = version.slice(last + 1)
  if (!/^[0-9]{1,15}$/.test(part)) return undefined
  return Number(part)
}

/** A script reply as a flat array of strings; CORRUPT otherwise. */
export function reply(value: unknown, key: string): string[] {
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
    throw corrupt(key, 'unexpected script reply')
  }
  return value as string[]
}

/** The meta a failed precondition reports, from a `PRECONDITION_FAILED v size w t` reply. */
export function preconditionFailed(key: string, r: string[]): AgentStateError {
  const current: ValueMeta | null =
    r[1] === '' || r[1] === undefined
      ? null
      : {
          key,
          version: r[1],
          size: toNumber(key, r[2], 'size'),
          writer: parseWriter(key, r[3]),
          updatedAt: toNumber(key, r[4], 't'),
        }
  return new AgentStateError(
    'PRECONDITION_FAILED',
    `Precondition failed for key ${JSON.stringify(key)}`,
    {
      context: { key, current },
    },
  )
}

/** The LEASE_HELD error for a key held by another holder. */
export function leaseHeld(
  key: string,
  holder: string | undefined,
  expiresAt: string | undefined,
): AgentStateError {
  return new AgentStateError('LEASE_HELD', `Key ${JSON.stringify(key)} is leased by ${holder}`, {
    context: { key, holder, expiresAt: toNumber(key, expiresAt, 'le') },
  })
}

/** The LEASE_LOST error for a stale lease. */
export function leaseLost(
  key: string,
  token: number,
  current: string | undefined,
): AgentStateError {
  return new AgentStateError(
    'LEASE_LOST',
    `The lease on ${JSON.stringify(key)} is no longer current`,
    {
      context: {
        key,
        token,
        currentToken: current === undefined || current === '' ? null : Number(current),
      },
    },
  )
}

/**
 * The lease id to send: the one the backend gave at acquisition, or '' for a
 * lease without one (a 0.1/0.2 grant, judged by its token alone; a current
 * grant refuses it).
 */
export function leaseIdOf(lease: Lease | undefined): string {
  return lease !== undefined && typeof lease.leaseId === 'string' ? lease.leaseId : ''
}

/** Throws the contract error a write script replied with (anything but `OK`). */
export function throwWriteFailure(key: string, r: string[], lease: Lease | undefined): never {
  switch (r[0]) {
    case 'LEASE_HELD':
      throw leaseHeld(key, r[1], r[2])
    case 'LEASE_LOST':
      throw leaseLost(key, lease?.token ?? 0, r[1])
    case 'PRECONDITION_FAILED':
      throw preconditionFailed(key, r)
    default:
      throw corrupt(key, `unexpected script status ${JSON.stringify(r[0])}`)
  }
}
