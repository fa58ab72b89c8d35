import { AgentStateError } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { isBusy, toAgentStateError } from '../src/errors.js'

// Unit tests of the error mapping: these codes cannot be provoked on demand
// from a real database (a failing fsync, a full disk), so plain objects
// carrying better-sqlite3's `code` stand in for SqliteError here.
const sqliteError = (code: string): Error => Object.assign(new Error(code), { code })

describe('toAgentStateError', () => {
  it.each([
    ['SQLITE_CORRUPT', false, 'CORRUPT'],
    ['SQLITE_CORRUPT_INDEX', true, 'CORRUPT'],
    ['SQLITE_NOTADB', false, 'CORRUPT'],
    ['SQLITE_BUSY', true, 'UNAVAILABLE'],
    ['SQLITE_BUSY_SNAPSHOT', true, 'UNAVAILABLE'],
    ['SQLITE_LOCKED', false, 'UNAVAILABLE'],
    ['SQLITE_IOERR_FSYNC', true, 'INDETERMINATE'],
    ['SQLITE_IOERR_READ', false, 'UNAVAILABLE'],
    ['SQLITE_FULL', true, 'UNAVAILABLE'],
    ['SQLITE_CANTOPEN', false, 'UNAVAILABLE'],
  ])('maps %s (mayHaveApplied: %s) to %s and keeps the cause', (code, mayHaveApplied, expected) => {
    const cause = sqliteError(code)
    const mapped = toAgentStateError(cause, { operation: 'put', mayHaveApplied })
    expect(mapped).toBeInstanceOf(AgentStateError)
    expect(mapped.code).toBe(expected)
    expect(mapped.cause).toBe(cause)
    expect(mapped.context).toEqual({ operation: 'put', sqliteCode: code })
  })

  it('passes AgentStateErrors through and wraps foreign errors as non-retryable UNAVAILABLE', () => {
    const own = new AgentStateError('LEASE_HELD', 'held')
    expect(toAgentStateError(own, { operation: 'put', mayHaveApplied: true })).toBe(own)
    const foreign = toAgentStateError(new TypeError('boom'), {
      operation: 'get',
      mayHaveApplied: false,
    })
    expect(foreign.code).toBe('UNAVAILABLE')
    expect(foreign.retryable).toBe(false)
  })

  it('treats only BUSY and LOCKED as worth waiting for', () => {
    expect(isBusy(sqliteError('SQLITE_BUSY_RECOVERY'))).toBe(true)
    expect(isBusy(sqliteError('SQLITE_LOCKED_SHAREDCACHE'))).toBe(true)
    expect(isBusy(sqliteError('SQLITE_CORRUPT'))).toBe(false)
    expect(isBusy(new Error('x'))).toBe(false)
  })
})
