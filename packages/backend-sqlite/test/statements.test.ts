import { statSync } from 'node:fs'
import { createManualClock } from '@agent-state/core'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { LIVE_INDEX } from '../src/schema.js'
import { scanSql } from '../src/statements.js'
import { rejection, useTempDatabase } from './helpers.js'

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

/** WAL header and frame header sizes, from the SQLite file format. */
const WAL_HEADER_BYTES = 32
const FRAME_HEADER_BYTES = 24

describe('per-operation statements', () => {
  const db = useTempDatabase()
  const open = db.open

  it('serves every listing shape from the covering live index, without a sort', () => {
    open()
    const raw = new Database(db.path, { readonly: true })
    try {
      for (const inclusive of [true, false]) {
        for (const bounded of [true, false]) {
          const args = bounded ? ['ns', 'a', 'b', 10] : ['ns', 'a', 10]
          const plan = raw
            .prepare(`EXPLAIN QUERY PLAN ${scanSql(inclusive, bounded)}`)
            .all(...args)
            .map((row) => (row as { detail: string }).detail)
            .join('\n')
          expect(plan).toContain(`USING COVERING INDEX ${LIVE_INDEX}`)
          expect(plan).not.toContain('TEMP B-TREE')
        }
      }
    } finally {
      raw.close()
    }
  })

  it('writes one page per lease step (the listing index is untouched) and two per put', async () => {
    const clock = createManualClock(1_000_000)
    const backend = open({ clock: clock.now })
    await backend.put('a', bytes('value of a'))
    const raw = new Database(db.path, { readonly: true })
    const pageSize = raw.pragma('page_size', { simple: true }) as number
    raw.close()
    const walBytes = (): number => statSync(`${db.path}-wal`).size
    const frames = async (step: () => Promise<unknown>): Promise<number> => {
      const before = walBytes()
      await step()
      return (walBytes() - before) / (pageSize + FRAME_HEADER_BYTES)
    }
    expect(walBytes()).toBeGreaterThan(WAL_HEADER_BYTES)
    const lease = await backend.acquireLease('a', { holder: 'h', ttlMs: 1000 })
    // Time moves, so the renewal changes the row (SQLite writes no page for an unchanged row).
    clock.advance(10)
    expect(await frames(() => backend.renewLease(lease))).toBe(1)
    expect(await frames(() => backend.releaseLease(lease))).toBe(1)
    // A put changes the version, which the covering index holds: row page and index page.
    expect(await frames(() => backend.put('a', bytes('new value')))).toBe(2)
    expect(new TextDecoder().decode((await backend.get('a'))?.value)).toBe('new value')
    expect((await backend.list()).entries.map((entry) => entry.key)).toEqual(['a'])
  })

  it('keeps the value when only the lease changes, and the lease when only the value changes', async () => {
    const clock = createManualClock(1_000_000)
    const backend = open({ clock: clock.now })
    const first = await backend.put('k', bytes('one'), { writer: { writerId: 'w1' } })
    const lease = await backend.acquireLease('k', { holder: 'h', ttlMs: 1000 })
    expect(await backend.get('k')).toEqual({ value: bytes('one'), meta: first })
    const second = await backend.put('k', bytes('two'), { lease })
    expect(await backend.getLease('k')).toEqual(lease)
    await backend.releaseLease(lease)
    expect(await backend.get('k')).toEqual({ value: bytes('two'), meta: second })
    expect(await backend.delete('k')).toBe(true)
    const next = await backend.acquireLease('k', { holder: 'h2', ttlMs: 1000 })
    expect(next.token).toBe(lease.token + 1)
    expect(await backend.get('k')).toBeNull()
    expect((await backend.list()).entries).toEqual([])
  })

  it('reports the stored size in a failed precondition although writes do not read the value', async () => {
    const backend = open()
    const meta = await backend.put('k', new Uint8Array(4096).fill(1))
    const error = await rejection(backend.put('k', bytes('x'), { ifMatch: 'not-it' }))
    expect(error.code).toBe('PRECONDITION_FAILED')
    expect(error.context.current).toEqual(meta)
    expect((error.context.current as { size: number }).size).toBe(4096)
  })

  it('reports inconsistent lease columns as CORRUPT on the operations that read them', async () => {
    const backend = open({ namespace: 'ns' })
    await backend.put('k', bytes('v'))
    await backend.acquireLease('k', { holder: 'h', ttlMs: 60_000 })
    const raw = new Database(db.path)
    raw.prepare("UPDATE agent_state_entries SET lease_token = NULL WHERE key = 'k'").run()
    raw.close()
    expect((await rejection(backend.getLease('k'))).code).toBe('CORRUPT')
    expect((await rejection(backend.put('k', bytes('w')))).code).toBe('CORRUPT')
    expect((await rejection(backend.acquireLease('k', { holder: 'x', ttlMs: 10 }))).code).toBe(
      'CORRUPT',
    )
  })

  it('returns the same frozen writer for rows written by one writer, and rejects a stored writer without a writerId', async () => {
    const backend = open({ namespace: 'ns' })
    const writer = { writerId: 'agent', sessionId: 's1' }
    await backend.put('a', bytes('1'), { writer })
    await backend.put('b', bytes('2'), { writer })
    const a = await backend.head('a')
    const b = await backend.head('b')
    expect(a?.writer).toEqual(writer)
    expect(Object.isFrozen(a?.writer)).toBe(true)
    expect(b?.writer).toBe(a?.writer)
    const raw = new Database(db.path)
    raw.prepare("UPDATE agent_state_entries SET writer = '[1]' WHERE key = 'b'").run()
    raw.close()
    expect((await rejection(backend.get('b'))).code).toBe('CORRUPT')
  })
})
