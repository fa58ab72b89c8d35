import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createSqliteBackend } from '../src/index.js'
import { rejection, tempDir } from './helpers.js'

describe('lock contention', () => {
  let dir: { dir: string; remove: () => void }
  let path: string
  let locker: Database.Database

  beforeEach(async () => {
    dir = tempDir()
    path = join(dir.dir, 'state.db')
    const setup = createSqliteBackend({ path })
    await setup.put('k', new Uint8Array([1]))
    await setup.close()
    locker = new Database(path)
  })
  afterEach(() => {
    if (locker.inTransaction) locker.exec('ROLLBACK')
    locker.close()
    dir.remove()
  })

  it('maps SQLITE_BUSY to UNAVAILABLE after busyTimeoutMs, writing nothing, and never leaks a raw error', async () => {
    const backend = createSqliteBackend({ path, busyTimeoutMs: 60 })
    const before = await backend.head('k')
    locker.exec('BEGIN EXCLUSIVE')
    const started = performance.now()
    const error = await rejection(backend.put('k', new Uint8Array([2])))
    const waited = performance.now() - started
    expect(error.code).toBe('UNAVAILABLE')
    expect(error.retryable).toBe(true)
    expect(error.context).toMatchObject({ operation: 'put' })
    expect(String(error.context.sqliteCode)).toMatch(/^SQLITE_BUSY/)
    expect(waited).toBeGreaterThanOrEqual(55)
    expect((await rejection(backend.acquireLease('k', { holder: 'h', ttlMs: 1000 }))).code).toBe(
      'UNAVAILABLE',
    )
    // WAL: readers are not blocked by the writer.
    expect((await backend.head('k'))?.version).toBe(before?.version)
    locker.exec('ROLLBACK')
    expect((await backend.put('k', new Uint8Array([3]))).version).not.toBe(before?.version)
    await backend.close()
  })

  it('waits for a lock released within busyTimeoutMs, yielding to the event loop meanwhile', async () => {
    const backend = createSqliteBackend({ path, busyTimeoutMs: 5000 })
    locker.exec('BEGIN IMMEDIATE')
    let ticks = 0
    const ticker = setInterval(() => {
      ticks++
    }, 5)
    setTimeout(() => locker.exec('COMMIT'), 300)
    const started = performance.now()
    const meta = await backend.put('k', new Uint8Array([4]))
    const waited = performance.now() - started
    clearInterval(ticker)
    expect(meta.size).toBe(1)
    expect(waited).toBeGreaterThanOrEqual(250)
    // Blocking for the whole 300 ms would leave at most one tick, after the put. The slices
    // normally let 8 or more through; a loaded 2-core machine stretches each slice, so the
    // bar sits at 3, which a blocking wait still cannot reach.
    expect(ticks).toBeGreaterThanOrEqual(3)
    await backend.close()
  })
})
