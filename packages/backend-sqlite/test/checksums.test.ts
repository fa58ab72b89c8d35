import { randomBytes } from 'node:crypto'
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Backend, isAgentStateError } from '@agent-state/core'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createSqliteBackend, SCHEMA_VERSION } from '../src/index.js'
import { dropIndexEntries, PRIMARY_KEY_INDEX, rejection, seededRandom, tempDir } from './helpers.js'
import { V1_BIG_VALUE, V1_SAMPLE_ROWS, writeV1Database } from './legacy-v1-database.js'

interface Expected {
  readonly value: Uint8Array
  readonly version: string
  readonly writerId: string
}

const equalBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  a.byteLength === b.byteLength && a.every((byte, i) => byte === b[i])

/** Tallies of every read against a damaged copy. */
interface Tally {
  right: number
  corrupt: number
  /** Any other failure, by code: loud, but not the code the contract names. */
  other: Record<string, number>
  /** Reads that returned something other than what was stored, without an error. */
  silent: string[]
}

async function readAll(
  backend: Backend,
  expected: ReadonlyMap<string, Expected | null>,
  tally: Tally,
  where: string,
): Promise<void> {
  const outcome = async (label: string, read: () => Promise<boolean>) => {
    try {
      if (await read()) tally.right++
      else tally.silent.push(`${where}: ${label}`)
    } catch (error) {
      if (isAgentStateError(error, 'CORRUPT')) tally.corrupt++
      else {
        // The SQLite code and where, so a failure names what to map and how to replay it.
        const code = isAgentStateError(error)
          ? `${error.code} (${String(error.context.sqliteCode ?? '')}) at ${where}: ${label}`
          : `raw ${String(error)}`
        tally.other[code] = (tally.other[code] ?? 0) + 1
      }
    }
  }
  for (const [key, want] of expected) {
    await outcome(`get ${key}`, async () => {
      const got = await backend.get(key)
      if (want === null) return got === null
      return (
        got !== null &&
        equalBytes(got.value, want.value) &&
        got.meta.version === want.version &&
        got.meta.writer?.writerId === want.writerId &&
        got.meta.size === want.value.byteLength
      )
    })
    await outcome(`head ${key}`, async () => {
      const got = await backend.head(key)
      if (want === null) return got === null
      return got !== null && got.version === want.version && got.writer?.writerId === want.writerId
    })
  }
  // A listing must show exactly the live keys: no wrong entry, none missing.
  await outcome('list', async () => {
    const page = await backend.list({ limit: 1000 })
    const live = new Map([...expected].filter(([, want]) => want !== null))
    let previous = ''
    for (const entry of page.entries) {
      const want = live.get(entry.key)
      if (want === undefined || want === null) return false
      if (entry.version !== want.version || entry.size !== want.value.byteLength) return false
      if (entry.key <= previous) return false
      previous = entry.key
    }
    return page.entries.length === live.size && page.cursor === undefined
  })
}

describe('sqlite integrity checks', () => {
  let dir: { dir: string; remove: () => void }
  let path: string

  beforeEach(() => {
    dir = tempDir()
    path = join(dir.dir, 'state.db')
  })
  afterEach(() => dir.remove())

  it('gives no silent wrong read when bytes are flipped anywhere in any page', async () => {
    const backend = createSqliteBackend({ path, namespace: 'flip' })
    const expected = new Map<string, Expected | null>()
    for (let i = 0; i < 40; i++) {
      const key = `key/${String(i).padStart(2, '0')}`
      // Small values share pages; every fifth one spills into overflow pages.
      const value = randomBytes(i % 5 === 0 ? 6000 : 20 + i * 9)
      const writerId = `writer-${i % 3}`
      const meta = await backend.put(key, value, { writer: { writerId } })
      expected.set(key, { value, version: meta.version, writerId })
    }
    for (const i of [3, 17, 31]) {
      const key = `key/${String(i).padStart(2, '0')}`
      await backend.delete(key)
      expected.set(key, null)
    }
    await backend.acquireLease('key/08', { holder: 'h', ttlMs: 60_000 })
    await backend.close()

    const original = readFileSync(path)
    const pageSize = original.readUInt16BE(16)
    const pages = original.length / pageSize
    expect(pages).toBeGreaterThan(10)
    const copy = join(dir.dir, 'damaged.db')
    const tally: Tally = { right: 0, corrupt: 0, other: {}, silent: [] }
    const opens = { ok: 0, refused: {} as Record<string, number> }
    const trialsPerPage = 8
    const seed = Number(process.env.FLIP_SEED ?? Math.floor(Math.random() * 2 ** 31))
    const random = seededRandom(seed)
    for (let page = 0; page < pages; page++) {
      for (let trial = 0; trial < trialsPerPage; trial++) {
        const damaged = Buffer.from(original)
        // Ten bytes anywhere in the page, each XORed with a non-zero mask.
        for (let flip = 0; flip < 10; flip++) {
          const offset = page * pageSize + Math.floor(random() * pageSize)
          damaged[offset] = (damaged[offset] as number) ^ (1 + Math.floor(random() * 255))
        }
        rmSync(copy, { force: true })
        rmSync(`${copy}-wal`, { force: true })
        rmSync(`${copy}-shm`, { force: true })
        writeFileSync(copy, damaged, { mode: 0o600 })
        let reopened: Backend
        try {
          reopened = createSqliteBackend({ path: copy, namespace: 'flip' })
          opens.ok++
        } catch (error) {
          // Refusing to open a damaged file is loud too.
          expect(isAgentStateError(error)).toBe(true)
          const { code } = error as { code: string }
          opens.refused[code] = (opens.refused[code] ?? 0) + 1
          continue
        }
        try {
          await readAll(reopened, expected, tally, `page ${page} trial ${trial}`)
        } finally {
          await reopened.close()
        }
      }
    }
    // FLIP_SEED=<seed> replays a failing run.
    expect({ seed, silent: tally.silent }).toEqual({ seed, silent: [] })
    expect({ seed, other: tally.other }).toEqual({ seed, other: {} })
    // The damage must actually have been noticed often, or this test proves nothing.
    expect(tally.corrupt).toBeGreaterThan(pages)
    expect(tally.right).toBeGreaterThan(0)
    const { right, corrupt } = tally
    console.log('flip test', { seed, pages, opens, right, corrupt })
  }, 120_000)
})

describe('sqlite index pages that lose entries', () => {
  let dir: { dir: string; remove: () => void }
  let path: string

  beforeEach(() => {
    dir = tempDir()
    path = join(dir.dir, 'state.db')
  })
  afterEach(() => dir.remove())

  async function fill(): Promise<void> {
    const backend = createSqliteBackend({ path, namespace: 'ns' })
    for (let i = 0; i < 20; i++)
      await backend.put(`key/${String(i).padStart(2, '0')}`, randomBytes(30))
    await backend.delete('key/05')
    await backend.close()
  }

  it.each([
    ['the listing index', 'agent_state_entries_live'],
    ['the index of deleted keys', 'agent_state_entries_dead'],
    ['the primary key', PRIMARY_KEY_INDEX],
  ])(
    'reports a listing as CORRUPT when %s lost entries, never a short page',
    async (_label, index) => {
      await fill()
      dropIndexEntries(path, index, 1)
      const backend = createSqliteBackend({ path, namespace: 'ns' })
      try {
        expect((await rejection(backend.list())).code).toBe('CORRUPT')
      } finally {
        await backend.close()
      }
    },
  )

  it('reports a live key the primary key lost as CORRUPT, never as absent', async () => {
    await fill()
    dropIndexEntries(path, PRIMARY_KEY_INDEX, 2)
    const backend = createSqliteBackend({ path, namespace: 'ns' })
    try {
      // The primary key's last two entries are the two last keys.
      expect((await rejection(backend.get('key/19'))).code).toBe('CORRUPT')
      expect((await rejection(backend.head('key/18'))).code).toBe('CORRUPT')
      expect((await rejection(backend.getLease('key/19'))).code).toBe('CORRUPT')
      expect((await rejection(backend.put('key/19', new Uint8Array([1])))).code).toBe('CORRUPT')
      expect((await backend.get('key/00'))?.value.byteLength).toBe(30)
    } finally {
      await backend.close()
    }
  })
})

describe('upgrading a version 1 database (no integrity checks)', () => {
  let dir: { dir: string; remove: () => void }
  let path: string

  beforeEach(() => {
    dir = tempDir()
    path = join(dir.dir, 'state.db')
  })
  afterEach(() => dir.remove())

  it('migrates on open: every row gets its checks, every value reads back unchanged', async () => {
    writeV1Database(path, V1_SAMPLE_ROWS)
    const backend = createSqliteBackend({ path, namespace: 'ns' })
    try {
      const a = await backend.get('a')
      expect(a?.value).toEqual(new Uint8Array([1, 2, 3]))
      expect(a?.meta).toMatchObject({
        version: 'v-a',
        size: 3,
        updatedAt: 1_700_000_000_123.5,
        writer: { writerId: 'w', sessionId: 's' },
      })
      expect((await backend.get('big'))?.value).toEqual(new Uint8Array(V1_BIG_VALUE))
      expect(await backend.get('deleted')).toBeNull()
      expect((await backend.getLease('leased'))?.token).toBe(5)
      expect((await backend.list()).entries.map((entry) => entry.key)).toEqual([
        'a',
        'big',
        'leased',
      ])
      // A renewal rewrites only the lease columns: the row check must still cover the stored writer text.
      const lease = await backend.getLease('leased')
      if (lease === null) throw new Error('the lease vanished')
      const renewed = await backend.renewLease(lease)
      expect((await backend.get('leased'))?.meta.writer).toEqual({ writerId: 'w', workerId: 'k' })
      await backend.put('leased', new Uint8Array([10]), { lease: renewed })
      await backend.releaseLease(renewed)
      expect((await backend.get('leased'))?.value).toEqual(new Uint8Array([10]))
    } finally {
      await backend.close()
    }
    const other = createSqliteBackend({ path, namespace: 'other' })
    expect((await other.get('a'))?.value).toEqual(new Uint8Array([7]))
    await other.close()

    const raw = new Database(path)
    expect(
      raw.prepare("SELECT value FROM agent_state_meta WHERE name = 'schema_version'").pluck().get(),
    ).toBe(SCHEMA_VERSION)
    expect(
      raw
        .prepare(
          'SELECT count(*) FROM agent_state_entries WHERE value_crc IS NULL OR row_check IS NULL OR list_check IS NULL OR meta_check IS NULL',
        )
        .pluck()
        .get(),
    ).toBe(0)
    // The migrated checks are live: damage to a migrated value is now caught.
    raw
      .prepare(
        "UPDATE agent_state_entries SET value = x'010203ff' , size = 4 WHERE key = 'a' AND namespace = 'ns'",
      )
      .run()
    // A row written without checks (by a 0.1 process still open during the upgrade) is refused too.
    raw
      .prepare(
        `INSERT INTO agent_state_entries (namespace, key, version, revision, writer, updated_at, size, value, fence)
         VALUES ('ns', 'unchecked', 'v-u', 1, NULL, 1, 1, x'01', 0)`,
      )
      .run()
    raw.close()
    const reopened = createSqliteBackend({ path, namespace: 'ns' })
    try {
      expect((await rejection(reopened.get('a'))).code).toBe('CORRUPT')
      expect((await rejection(reopened.get('unchecked'))).code).toBe('CORRUPT')
      expect((await rejection(reopened.list())).code).toBe('CORRUPT')
    } finally {
      await reopened.close()
    }
  })
})
