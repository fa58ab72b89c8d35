import { lstatSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createFsBackend, fileNameOf, layoutOf } from '../src/index.js'
import { TEMP_PREFIX } from '../src/key-layout.js'
import { formatIdentity, ownIdentity } from '../src/process-identity.js'
import { decodeRecordHeader } from '../src/record-file.js'
import { expectCode, tempRoot, text, untext } from './helpers.js'

function modeOf(path: string): number {
  return statSync(path).mode & 0o777
}

describe('fs backend on disk', () => {
  it('creates directories 0700 and record files 0600', async () => {
    const previous = process.umask(0o022)
    try {
      const root = join(tempRoot(), 'nested', 'root')
      const backend = createFsBackend({ root, namespace: 'perm' })
      await backend.put('a/b', text('x'))
      await backend.acquireLease('a/b', { holder: 'h', ttlMs: 60_000 })
      const layout = layoutOf(root, 'perm')
      for (const dir of [
        root,
        join(root, '..'),
        layout.namespaceDir,
        layout.recordsDir,
        layout.locksDir,
      ]) {
        expect(modeOf(dir), dir).toBe(0o700)
      }
      const files = readdirSync(layout.recordsDir)
      expect(files).toEqual([fileNameOf('a/b')])
      for (const file of files) expect(modeOf(join(layout.recordsDir, file))).toBe(0o600)
      await backend.close()
    } finally {
      process.umask(previous)
    }
  })

  it('maps odd, nested, case-only and long keys to safe, distinct file names', async () => {
    const root = tempRoot()
    const backend = createFsBackend({ root })
    const long = 'é'.repeat(200) // a 400-byte segment, beyond the 255-byte name limit
    const keys = [
      'a',
      'a/b',
      'a/b/c',
      'A',
      'Key',
      'key',
      'KEY',
      `${long}/x`,
      `x/${long}`,
      'z'.repeat(1024),
      'sp ace %20 #? &*',
      '..a/b..',
      'emoji/🦊/日本語',
      'e\u0301', // decomposed: must not be normalized into 'é'
      'é',
    ]
    for (const [i, key] of keys.entries()) await backend.put(key, text(`v${i}`))
    for (const [i, key] of keys.entries()) {
      const got = await backend.get(key)
      expect(got?.meta.key).toBe(key)
      expect(untext(got?.value ?? new Uint8Array())).toBe(`v${i}`)
    }
    const names = readdirSync(layoutOf(root, 'default').recordsDir)
    expect(names).toHaveLength(keys.length)
    for (const name of names) {
      expect(Buffer.byteLength(name)).toBeLessThanOrEqual(255)
      expect(name).toMatch(/^([0-9a-f]+|h[0-9a-f]{64})$/)
    }
    // Distinct even when compared case-insensitively (macOS, Windows filesystems).
    expect(new Set(names.map((name) => name.toLowerCase())).size).toBe(keys.length)
    const listed = (await backend.list()).entries.map((entry) => entry.key)
    const byBytes = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
    expect(listed).toEqual(byBytes)
    expect((await backend.list({ prefix: long })).entries.map((entry) => entry.key)).toEqual([
      `${long}/x`,
    ])
    await backend.close()
  })

  it('lists hex-named and hashed-named keys together in UTF-8 byte order, page by page', async () => {
    const backend = createFsBackend({ root: tempRoot() })
    const long = (c: string): string => c.repeat(300)
    const keys = [
      '\uE000',
      '\u{1F600}',
      'a',
      `b${long('x')}`,
      'by',
      `b${'\u{1F600}'.repeat(100)}`,
      'c',
      long('c'),
    ]
    for (const key of keys) await backend.put(key, text(key.slice(0, 5)))
    const expected = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
    expect((await backend.list()).entries.map((entry) => entry.key)).toEqual(expected)
    const paged: string[] = []
    let cursor: string | undefined
    do {
      const page = await backend.list(cursor === undefined ? { limit: 2 } : { limit: 2, cursor })
      paged.push(...page.entries.map((entry) => entry.key))
      cursor = page.cursor
    } while (cursor !== undefined)
    expect(paged).toEqual(expected)
    expect((await backend.list({ prefix: 'b' })).entries.map((entry) => entry.key)).toEqual(
      expected.filter((key) => key.startsWith('b')),
    )
    expect((await backend.list({ prefix: '\uD800' })).entries).toEqual([])
    await backend.close()
  })

  it('reads a planted record symlink as CORRUPT and never touches its target', async () => {
    const root = tempRoot()
    const outside = join(tempRoot(), 'secret')
    writeFileSync(outside, 'do not touch')
    const backend = createFsBackend({ root })
    await backend.put('other', text('x'))
    const path = join(layoutOf(root, 'default').recordsDir, fileNameOf('victim'))
    symlinkSync(outside, path)
    await expectCode(backend.get('victim'), 'CORRUPT')
    await expectCode(backend.put('victim', text('overwrite')), 'CORRUPT')
    const listed = await backend.list()
    expect(listed.entries.map((entry) => [entry.key, entry.corrupt?.file])).toEqual([
      ['other', undefined],
      ['victim', path],
    ])
    expect(readFileSync(outside, 'utf8')).toBe('do not touch')
    expect(lstatSync(path).isSymbolicLink()).toBe(true)
    await backend.close()
  })

  it('refuses a namespace or records directory replaced by a symlink', async () => {
    const outsideDir = tempRoot()
    const root = tempRoot()
    symlinkSync(outsideDir, join(root, 'evil'))
    const backend = createFsBackend({ root, namespace: 'evil' })
    await expectCode(backend.put('k', text('x')), 'UNAVAILABLE')
    await expectCode(backend.get('k'), 'UNAVAILABLE')
    expect(readdirSync(outsideDir)).toEqual([])

    const other = createFsBackend({ root, namespace: 'ok' })
    await other.put('k', text('x'))
    await other.close()
    const layout = layoutOf(root, 'ok')
    const { rmSync } = await import('node:fs')
    rmSync(layout.recordsDir, { recursive: true })
    symlinkSync(outsideDir, layout.recordsDir)
    const reopened = createFsBackend({ root, namespace: 'ok' })
    await expectCode(reopened.put('k', text('y')), 'UNAVAILABLE')
    expect(readdirSync(outsideDir)).toEqual([])
  })

  it('ignores planted commit slots and lock generations of the previous version', async () => {
    const root = tempRoot()
    const outside = join(tempRoot(), 'target')
    writeFileSync(outside, 'keep')
    const backend = createFsBackend({ root, lockBreakMs: 60_000, lockTimeoutMs: 2000 })
    await backend.put('k', text('1'))
    const { locksDir, recordsDir } = layoutOf(root, 'default')
    const name = fileNameOf('k')
    const version = decodeRecordHeader(readFileSync(join(recordsDir, name)), name).version
    // Slots of the current state: a symlink to a file outside, then a plain file;
    // neither names a temp file of this package, so each is held by nobody.
    symlinkSync(outside, join(locksDir, `${name}@${version}.1`))
    writeFileSync(join(locksDir, `${name}@${version}.2`), 'not a symlink')
    // Lock generations left by a crash under the previous version: no meaning now.
    symlinkSync('held.1.1.00000000.-.0', join(locksDir, `${name}.1`))
    const started = performance.now()
    await backend.put('k', text('2'))
    expect(performance.now() - started).toBeLessThan(1000)
    expect(untext((await backend.get('k'))?.value ?? new Uint8Array())).toBe('2')
    expect(readFileSync(outside, 'utf8')).toBe('keep')
    // The writer that committed over that state removed its whole chain, planted slots included.
    expect(readdirSync(locksDir).sort()).toEqual([`${name}.1`])
    await backend.close()
  })

  it('reports a damaged record file as CORRUPT, never as empty', async () => {
    const root = tempRoot()
    const backend = createFsBackend({ root })
    await backend.put('k', text('hello world'))
    const path = join(layoutOf(root, 'default').recordsDir, fileNameOf('k'))
    const good = readFileSync(path)

    writeFileSync(path, good.subarray(0, good.length - 3)) // torn tail
    for (const failing of [backend.get('k'), backend.head('k'), backend.put('k', text('x'))]) {
      const error = await expectCode(failing, 'CORRUPT')
      expect(error.context.file).toBe(path)
      expect(error.message).toContain(path)
    }
    expect((await backend.list()).entries[0]?.corrupt?.code).toBe('CORRUPT')

    const flipped = Buffer.from(good)
    flipped[flipped.length - 6] = (flipped[flipped.length - 6] as number) ^ 0xff // value byte
    writeFileSync(path, flipped)
    // Caught by core's record checksum, not the envelope's: the path is added all the same.
    expect((await expectCode(backend.get('k'), 'CORRUPT')).context.file).toBe(path)

    writeFileSync(path, '')
    await expectCode(backend.get('k'), 'CORRUPT')

    const newer = Buffer.from(good)
    newer[3] = 0x32 // format "2"
    writeFileSync(path, newer)
    await expectCode(backend.get('k'), 'INCOMPATIBLE_SCHEMA')

    writeFileSync(path, good)
    expect(untext((await backend.get('k'))?.value ?? new Uint8Array())).toBe('hello world')
    await backend.close()
  })

  it('rejects a record file holding another key', async () => {
    const root = tempRoot()
    const backend = createFsBackend({ root })
    await backend.put('a', text('A'))
    const { recordsDir } = layoutOf(root, 'default')
    const bytes = readFileSync(join(recordsDir, fileNameOf('a')))
    writeFileSync(join(recordsDir, fileNameOf('b')), bytes)
    await expectCode(backend.get('b'), 'CORRUPT')
    await backend.close()
  })

  it('never lists temp files, and leaves no temp file after writes', async () => {
    const root = tempRoot()
    const backend = createFsBackend({ root })
    await backend.put('a', text('1'))
    const { recordsDir } = layoutOf(root, 'default')
    // A live writer's temp file (this process, another thread id): must stay, unlisted.
    const live = `${TEMP_PREFIX}${formatIdentity({ ...ownIdentity, thread: 999 })}.0123456789ab`
    writeFileSync(join(recordsDir, live), 'partial')
    const writes = Array.from({ length: 20 }, (_, i) => backend.put(`k${i % 3}`, text(`${i}`)))
    const pages = Array.from({ length: 5 }, () => backend.list())
    await Promise.all(writes)
    for (const page of await Promise.all(pages)) {
      for (const entry of page.entries) expect(entry.key).toMatch(/^(a|k\d)$/)
    }
    expect((await backend.list()).entries.map((entry) => entry.key)).toEqual([
      'a',
      'k0',
      'k1',
      'k2',
    ])
    const temps = readdirSync(recordsDir).filter((name) => name.startsWith(TEMP_PREFIX))
    expect(temps).toEqual([live])
    await backend.close()
  })
})
