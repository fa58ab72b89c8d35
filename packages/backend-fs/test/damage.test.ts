import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createFsBackend, type FsListEntry, fileNameOf, layoutOf } from '../src/index.js'
import { expectCode, tempRoot, text } from './helpers.js'

/** A namespace with keys a, b/1, b/2, c, one of which is then damaged by `damage`. */
async function namespaceWithDamage(damaged: string, damage: (bytes: Buffer) => Buffer | string) {
  const root = tempRoot()
  const backend = createFsBackend({ root })
  for (const key of ['a', 'b/1', 'b/2', 'c']) await backend.put(key, text(`value of ${key}`))
  const file = join(layoutOf(root, 'default').recordsDir, fileNameOf(damaged))
  writeFileSync(file, damage(readFileSync(file)))
  return { backend, file }
}

const shape = (entries: readonly FsListEntry[]) =>
  entries.map((entry) => (entry.corrupt === undefined ? entry.key : `${entry.key}!`))

describe('fs backend: damaged records in listings', () => {
  it('lists around a torn record and reports it in its place, with its file', async () => {
    const { backend, file } = await namespaceWithDamage('b/1', (bytes) =>
      bytes.subarray(0, bytes.length - 3),
    )
    const page = await backend.list()
    expect(shape(page.entries)).toEqual(['a', 'b/1!', 'b/2', 'c'])
    const damaged = page.entries[1]
    expect(damaged?.version).toBe('')
    expect(damaged?.corrupt?.code).toBe('CORRUPT')
    expect(damaged?.corrupt?.file).toBe(file)
    expect(damaged?.corrupt?.message).toContain(file)
    expect(page.unreadable).toBeUndefined()
    // The healthy entries are the same as without the damage.
    expect(page.entries[0]?.version).toBe((await backend.head('a'))?.version)
    // Page by page it is counted once, like any key; grouped by a delimiter like any key.
    const walked: string[] = []
    let cursor: string | undefined
    do {
      const next = await backend.list(cursor === undefined ? { limit: 1 } : { limit: 1, cursor })
      walked.push(...shape(next.entries))
      cursor = next.cursor
    } while (cursor !== undefined)
    expect(walked).toEqual(['a', 'b/1!', 'b/2', 'c'])
    const grouped = await backend.list({ delimiter: '/' })
    expect(shape(grouped.entries)).toEqual(['a', 'c'])
    expect(grouped.prefixes).toEqual(['b/'])
    expect(shape((await backend.list({ prefix: 'b/' })).entries)).toEqual(['b/1!', 'b/2'])
    // Reading it stays an error that names the file.
    const error = await expectCode(backend.get('b/1'), 'CORRUPT')
    expect(error.context.file).toBe(file)
    await backend.close()
  })

  it('reports damage found by the inner record checksum and a newer format the same way', async () => {
    const flipped = await namespaceWithDamage('c', (bytes) => {
      const copy = Buffer.from(bytes)
      copy[copy.length - 6] = (copy[copy.length - 6] as number) ^ 0xff // a value byte
      return copy
    })
    const page = await flipped.backend.list()
    expect(shape(page.entries)).toEqual(['a', 'b/1', 'b/2', 'c!'])
    expect(page.entries[3]?.corrupt).toMatchObject({ code: 'CORRUPT', file: flipped.file })
    await flipped.backend.close()

    const newer = await namespaceWithDamage('a', (bytes) => {
      const copy = Buffer.from(bytes)
      copy[3] = 0x32 // envelope format "2"
      return copy
    })
    const first = (await newer.backend.list()).entries[0]
    expect(first?.corrupt).toMatchObject({ code: 'INCOMPATIBLE_SCHEMA', file: newer.file })
    await expectCode(newer.backend.get('a'), 'INCOMPATIBLE_SCHEMA')
    await newer.backend.close()
  })

  it('reports a long-key record whose key is unreadable on the first page only', async () => {
    const root = tempRoot()
    const backend = createFsBackend({ root })
    const long = `long/${'x'.repeat(300)}`
    await backend.put('a', text('A'))
    await backend.put(long, text('L'))
    await backend.put('z', text('Z'))
    const file = join(layoutOf(root, 'default').recordsDir, fileNameOf(long))
    writeFileSync(file, 'garbage, not an envelope')
    const reopened = createFsBackend({ root }) // an instance that never learnt the key
    const page = await reopened.list({ limit: 1 })
    expect(shape(page.entries)).toEqual(['a'])
    expect(page.unreadable).toEqual([
      { code: 'CORRUPT', file, message: expect.stringContaining(file) as string },
    ])
    const rest = await reopened.list({ limit: 10, cursor: page.cursor as string })
    expect(shape(rest.entries)).toEqual(['z'])
    expect(rest.unreadable).toBeUndefined()
    // Whatever the prefix: its key cannot be known, so it cannot be ruled out.
    expect((await reopened.list({ prefix: 'z' })).unreadable?.[0]?.file).toBe(file)
    expect((await expectCode(reopened.get(long), 'CORRUPT')).context.file).toBe(file)
    await backend.close()
    await reopened.close()
  })

  it('names the file in the CORRUPT error of every operation on the key', async () => {
    const { backend, file } = await namespaceWithDamage('a', () => 'not a record')
    const lease = { key: 'a', holder: 'h', token: 1, ttlMs: 60_000, expiresAt: Date.now() + 60_000 }
    for (const failing of [
      () => backend.get('a'),
      () => backend.head('a'),
      () => backend.put('a', text('x')),
      () => backend.delete('a'),
      () => backend.acquireLease('a', { holder: 'h', ttlMs: 1000 }),
      () => backend.getLease('a'),
      () => backend.renewLease(lease),
      () => backend.releaseLease(lease),
    ]) {
      const error = await expectCode(failing(), 'CORRUPT')
      expect(error.context.file).toBe(file)
      expect(error.message).toContain(file)
    }
    await backend.close()
  })
})
