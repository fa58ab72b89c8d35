import { createManualClock, openBackend } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { createBackendFromUrl, createSqliteBackend } from '../src/index.js'
import { thrown, useTempDatabase } from './helpers.js'

// Issue 19: every backend reports bad options and bad URLs in core's one shape.
describe('SQLite options', () => {
  const db = useTempDatabase()

  it('refuses an unknown option (a typo) with the shared INVALID_ARGUMENT shape', () => {
    const options = { path: db.path, busyTimeout: 10 } as unknown as { path: string }
    const error = thrown(() => createSqliteBackend(options))
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).toMatch(/^Invalid SQLite backend option options: /)
    expect(error.message).toContain('busyTimeout')
    expect(error.context).toEqual({
      backend: 'SQLite',
      field: 'options',
      issues: [{ field: 'options', message: expect.stringContaining('busyTimeout') }],
    })
  })

  it('names the bad field in the message and context, without echoing the value', () => {
    const error = thrown(() => createSqliteBackend({ path: db.path, busyTimeoutMs: 700_001 }))
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).toMatch(/^Invalid SQLite backend option busyTimeoutMs: /)
    expect(error.message).not.toContain('700001')
    expect(error.context).toMatchObject({ backend: 'SQLite', field: 'busyTimeoutMs' })
  })

  it('still accepts the options openBackend forwards (namespace, clock)', async () => {
    const backend = db.track(
      await openBackend(`sqlite:${db.path}`, { namespace: 'n', clock: createManualClock(5).now }),
    )
    expect((await backend.put('k', new Uint8Array([1]))).updatedAt).toBe(5)
  })
})

describe('SQLite URLs', () => {
  it.each([
    ['not sqlite', 'file:./x.db', /starts with "sqlite:"/],
    ['a host', 'sqlite://host/x.db', /names a local file/],
    ['no path', 'sqlite:', /needs a path/],
    ['an unknown parameter', 'sqlite:./x.db?mode=ro', /unknown query parameter "mode"/],
    ['a repeated parameter', 'sqlite:./x.db?busyTimeoutMs=1&busyTimeoutMs=2', /repeated/],
    ['a malformed number', 'sqlite:./x.db?busyTimeoutMs=1.5', /non-negative integer/],
    ['a bad synchronous', 'sqlite:./x.db?synchronous=OFF', /FULL or NORMAL/],
  ])('refuses %s with the shared URL error shape', (_what, url, problem) => {
    const error = thrown(() => createBackendFromUrl(url))
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).toMatch(/^Invalid SQLite backend URL /)
    expect(error.message).toMatch(problem)
    expect(error.context).toMatchObject({ backend: 'SQLite', field: 'url', url })
  })
})
