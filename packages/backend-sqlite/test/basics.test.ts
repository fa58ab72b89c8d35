import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { createManualClock, openBackend } from '@agent-state/core'
import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { createBackendFromUrl, createSqliteBackend } from '../src/index.js'
import { rejection, thrown, useTempDatabase } from './helpers.js'

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

describe('sqlite backend on a real file', () => {
  const db = useTempDatabase()
  const open = db.open

  it('declares a durable, multi-process, host-clock backend with native daemon queues and cross-key fences', () => {
    expect(open().capabilities).toEqual({
      durable: true,
      multiProcess: true,
      multiHost: false,
      leaseClock: 'host',
      maxKeyBytes: 1024,
      maxValueBytes: 64 * 1024 * 1024,
      changeNotification: { mode: 'poll', maxDelayMs: 500 },
      nativeQueue: { version: 1 },
      crossKeyFence: true,
    })
    expect(typeof open().nativeQueue?.queueAppend).toBe('function')
  })

  it('creates the database, its -wal and -shm files with mode 0600 and uses WAL', async () => {
    const backend = open()
    await backend.put('a', bytes('1'))
    for (const suffix of ['', '-wal', '-shm']) {
      expect((statSync(db.path + suffix).mode & 0o777).toString(8)).toBe('600')
    }
    const raw = new Database(db.path, { readonly: true })
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal')
    raw.close()
  })

  it('lists in UTF-8 byte order from the index: U+E000 before an astral character', async () => {
    const backend = open()
    // UTF-16 order would put the astral key (surrogates 0xD83D...) before U+E000 and U+FFFD.
    const keys = ['k/\u{1F600}', 'k/\uFFFD', 'k/\uE000', 'k/z', 'k/\u00e9', 'k/Z']
    for (const key of keys) await backend.put(key, bytes(key))
    const page = await backend.list({ prefix: 'k/' })
    expect(page.entries.map((entry) => entry.key)).toEqual([
      'k/Z',
      'k/z',
      'k/\u00e9',
      'k/\uE000',
      'k/\uFFFD',
      'k/\u{1F600}',
    ])
    // The same order page by page with limit 1 and the cursor.
    const walked: string[] = []
    let cursor: string | undefined
    do {
      const next = await backend.list({ prefix: 'k/', limit: 1, ...(cursor ? { cursor } : {}) })
      walked.push(...next.entries.map((entry) => entry.key))
      cursor = next.cursor
    } while (cursor !== undefined)
    expect(walked).toEqual(page.entries.map((entry) => entry.key))
  })

  it('matches prefixes that end in an astral character or at the top of a code-point range', async () => {
    const backend = open()
    for (const key of ['p/\u{1F600}/a', 'p/\u{1F601}', 'p/\u{10FFFF}x', 'p/\uFFFF', 'q']) {
      await backend.put(key, bytes('v'))
    }
    const keysOf = async (prefix: string) =>
      (await backend.list({ prefix })).entries.map((entry) => entry.key)
    expect(await keysOf('p/\u{1F600}')).toEqual(['p/\u{1F600}/a'])
    expect(await keysOf('p/\u{10FFFF}')).toEqual(['p/\u{10FFFF}x'])
    expect(await keysOf('p/\uFFFF')).toEqual(['p/\uFFFF'])
    // A trailing high surrogate matches like String.prototype.startsWith.
    expect(await keysOf('p/\uD83D')).toEqual(['p/\u{1F600}/a', 'p/\u{1F601}'])
    expect(await keysOf('p/\uDE00')).toEqual([])
  })

  it('never lists deleted keys, but keeps their fencing counter across delete and reopen', async () => {
    const clock = createManualClock(1_000_000)
    const backend = open({ clock: clock.now })
    await backend.put('a', bytes('1'))
    await backend.put('b', bytes('2'))
    const first = await backend.acquireLease('b', { holder: 'h1', ttlMs: 1000 })
    expect(await backend.delete('b', { lease: first })).toBe(true)
    expect(await backend.releaseLease(first)).toBe(true)
    expect((await backend.list()).entries.map((entry) => entry.key)).toEqual(['a'])
    await backend.close()

    const reopened = open({ clock: clock.now })
    const second = await reopened.acquireLease('b', { holder: 'h2', ttlMs: 1000 })
    expect(second.token).toBe(first.token + 1)
    expect(await reopened.get('b')).toBeNull()
    const meta = await reopened.put('b', bytes('3'), { lease: second })
    expect((await reopened.list()).entries.map((entry) => entry.key)).toEqual(['a', 'b'])
    clock.advance(1000)
    expect((await rejection(reopened.put('b', bytes('4'), { lease: second }))).code).toBe(
      'LEASE_LOST',
    )
    expect((await reopened.head('b'))?.version).toBe(meta.version)
  })

  it('keeps namespaces in one file isolated, and destroy() removes only its own', async () => {
    const one = open({ namespace: 'one' })
    const two = open({ namespace: 'two' })
    await one.put('shared', bytes('from one'))
    await two.put('shared', bytes('from two'))
    await one.acquireLease('leased', { holder: 'one', ttlMs: 60_000 })
    expect(await two.getLease('leased')).toBeNull()
    await two.acquireLease('leased', { holder: 'two', ttlMs: 60_000 })
    expect(new TextDecoder().decode((await one.get('shared'))?.value)).toBe('from one')
    expect((await two.list()).entries.map((entry) => entry.key)).toEqual(['shared'])
    await one.destroy?.()
    expect(await one.get('shared')).toBeNull()
    expect(await one.getLease('leased')).toBeNull()
    expect(new TextDecoder().decode((await two.get('shared'))?.value)).toBe('from two')
    expect((await two.getLease('leased'))?.holder).toBe('two')
    const raw = new Database(db.path, { readonly: true })
    expect(
      raw.prepare("SELECT count(*) AS n FROM agent_state_entries WHERE namespace = 'one'").get(),
    ).toEqual({ n: 0 })
    raw.close()
  })

  it('returns plain Uint8Arrays, stores empty and binary values exactly', async () => {
    const backend = open()
    const binary = Uint8Array.from({ length: 256 }, (_, i) => i)
    await backend.put('bin', binary)
    await backend.put('empty', new Uint8Array(0))
    const got = await backend.get('bin')
    expect(got?.value).toEqual(binary)
    expect(Object.getPrototypeOf(got?.value)).toBe(Uint8Array.prototype)
    expect((await backend.get('empty'))?.value.byteLength).toBe(0)
    expect((await backend.head('bin'))?.size).toBe(256)
  })

  it('fails with CLOSED after close(), and close() is idempotent', async () => {
    const backend = open()
    await backend.close()
    await backend.close()
    expect((await rejection(backend.get('a'))).code).toBe('CLOSED')
    expect((await rejection(backend.put('a', bytes('x')))).code).toBe('CLOSED')
    expect((await rejection(backend.list())).code).toBe('CLOSED')
  })

  it('rejects bad options with INVALID_ARGUMENT', () => {
    expect(thrown(() => createSqliteBackend({ path: '' })).code).toBe('INVALID_ARGUMENT')
    expect(thrown(() => createSqliteBackend({ path: db.path, namespace: '.hidden' })).code).toBe(
      'INVALID_ARGUMENT',
    )
    expect(
      thrown(() => createSqliteBackend({ path: db.path, synchronous: 'OFF' as 'FULL' })).code,
    ).toBe('INVALID_ARGUMENT')
  })

  it('fails with UNAVAILABLE naming the path when the directory does not exist', async () => {
    const missing = join(db.dir, 'nope', 'x.db')
    const error = thrown(() => createSqliteBackend({ path: missing }))
    expect(error.code).toBe('UNAVAILABLE')
    expect(error.message).toContain(missing)
    expect(error.message).toMatch(/directory does not exist/)
    expect(error.context).toMatchObject({ path: missing })
    // The same through a relative URL: the message names the resolved path.
    const cwd = process.cwd()
    process.chdir(db.dir)
    try {
      const viaUrl = await rejection(openBackend('sqlite:./nodir/x.db'))
      expect(viaUrl.code).toBe('UNAVAILABLE')
      expect(viaUrl.message).toContain(join(db.dir, 'nodir', 'x.db'))
    } finally {
      process.chdir(cwd)
    }
    expect(existsSync(join(db.dir, 'nodir'))).toBe(false)
  })

  it('opens from URLs through openBackend, relative and absolute, with query options', async () => {
    const absolute = await openBackend(`sqlite:${db.path}?synchronous=normal`, { namespace: 'url' })
    db.track(absolute)
    await absolute.put('x', bytes('1'))
    const raw = new Database(db.path, { readonly: true })
    expect(raw.prepare('SELECT namespace, key FROM agent_state_entries').all()).toEqual([
      { namespace: 'url', key: 'x' },
    ])
    raw.close()
    const triple = createBackendFromUrl(`sqlite://${db.path}`, { namespace: 'url' })
    db.track(triple)
    expect(await triple.head('x')).not.toBeNull()
    const cwd = process.cwd()
    process.chdir(db.dir)
    try {
      const relative = createBackendFromUrl('sqlite:./state.db', { namespace: 'url' })
      db.track(relative)
      expect(await relative.head('x')).not.toBeNull()
    } finally {
      process.chdir(cwd)
    }
    expect(thrown(() => createBackendFromUrl('sqlite:')).code).toBe('INVALID_ARGUMENT')
    expect(thrown(() => createBackendFromUrl('sqlite://host/x.db')).code).toBe('INVALID_ARGUMENT')
    expect(thrown(() => createBackendFromUrl(`sqlite:${db.path}?mode=ro`)).code).toBe(
      'INVALID_ARGUMENT',
    )
  })
})

describe('sqlite::memory:', () => {
  it('is declared neither durable nor multi-process, and instances of one process share it', async () => {
    const a = createBackendFromUrl('sqlite::memory:', { namespace: 'm' })
    const b = createBackendFromUrl('sqlite::memory:', { namespace: 'm' })
    expect(a.capabilities.durable).toBe(false)
    expect(a.capabilities.multiProcess).toBe(false)
    await a.put('k', bytes('v'))
    expect((await b.head('k'))?.size).toBe(1)
    await a.close()
    expect((await b.head('k'))?.size).toBe(1)
    await b.close()
    // The last close drops the database.
    const c = createBackendFromUrl('sqlite::memory:', { namespace: 'm' })
    expect(await c.head('k')).toBeNull()
    await c.close()
  })
})
