import { errorCodeOf } from '@agent-state/contract'
import type { Backend } from '@agent-state/core'
import { createManualClock, isAgentStateError, sortUtf8 } from '@agent-state/core'
import { afterEach, describe, expect, it } from 'vitest'
import { freshNamespace, openTestBackend } from './s3-config.js'

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)
const text = (value: Uint8Array): string => new TextDecoder().decode(value)

const opened: Backend[] = []
function open(namespace: string, clock?: () => number): Backend {
  const backend = openTestBackend(namespace, clock === undefined ? {} : { clock })
  opened.push(backend)
  return backend
}

afterEach(async () => {
  for (const backend of opened.splice(0)) {
    await backend.destroy?.().catch(() => {})
    await backend.close()
  }
})

describe('s3 backend on RGW: values and versions', () => {
  it('round-trips bytes with writer metadata', async () => {
    const backend = open(freshNamespace())
    const value = new Uint8Array([0, 1, 2, 255, 254])
    const meta = await backend.put('a/b', value, { writer: { writerId: 'w1', sessionId: 's' } })
    const got = await backend.get('a/b')
    expect(got?.value).toEqual(value)
    expect(got?.meta).toEqual(meta)
    expect(meta.writer).toEqual({ writerId: 'w1', sessionId: 's' })
    expect(await backend.head('missing')).toBeNull()
  })

  it('changes the version on an identical rewrite and never reuses it after delete', async () => {
    const backend = open(freshNamespace())
    const first = await backend.put('k', bytes('same'))
    const second = await backend.put('k', bytes('same'))
    expect(second.version).not.toBe(first.version)
    expect(await backend.delete('k')).toBe(true)
    expect(await backend.delete('k')).toBe(false)
    const third = await backend.put('k', bytes('same'))
    expect([first.version, second.version]).not.toContain(third.version)
    expect(await errorCodeOf(backend.put('k', bytes('x'), { ifMatch: second.version }))).toBe(
      'PRECONDITION_FAILED',
    )
  })

  it('enforces ifNoneMatch and ifMatch, with the current meta on failure', async () => {
    const backend = open(freshNamespace())
    expect(await errorCodeOf(backend.put('k', bytes('x'), { ifMatch: 'nope' }))).toBe(
      'PRECONDITION_FAILED',
    )
    expect(await backend.head('k')).toBeNull()
    const created = await backend.put('k', bytes('1'), { ifNoneMatch: '*' })
    try {
      await backend.put('k', bytes('2'), { ifNoneMatch: '*' })
      expect.unreachable()
    } catch (error) {
      expect(isAgentStateError(error, 'PRECONDITION_FAILED')).toBe(true)
      expect((error as { context: { current: unknown } }).context.current).toEqual(created)
    }
    const updated = await backend.put('k', bytes('3'), { ifMatch: created.version })
    expect(text((await backend.get('k'))?.value ?? new Uint8Array())).toBe('3')
    expect(await errorCodeOf(backend.delete('k', { ifMatch: created.version }))).toBe(
      'PRECONDITION_FAILED',
    )
    expect((await backend.head('k'))?.version).toBe(updated.version)
    expect(await backend.delete('k', { ifMatch: updated.version })).toBe(true)
    expect(await backend.get('k')).toBeNull()
  })

  it('lets exactly one of many concurrent instances win a compare-and-set', async () => {
    const namespace = freshNamespace()
    const seed = await open(namespace).put('race', bytes('0'))
    const instances = Array.from({ length: 12 }, () => open(namespace))
    const results = await Promise.allSettled(
      instances.map((backend, index) =>
        backend.put('race', bytes(`w${index}`), { ifMatch: seed.version }),
      ),
    )
    const winners = results.filter((result) => result.status === 'fulfilled')
    expect(winners).toHaveLength(1)
    for (const result of results) {
      if (result.status === 'rejected') {
        expect(isAgentStateError(result.reason, 'PRECONDITION_FAILED')).toBe(true)
      }
    }
  })

  it('loses no update when instances increment one counter with CAS loops', async () => {
    const namespace = freshNamespace()
    await open(namespace).put('counter', bytes('0'))
    const workers = 4
    const increments = 8
    await Promise.all(
      Array.from({ length: workers }, async () => {
        const backend = open(namespace)
        for (let done = 0; done < increments; ) {
          const current = await backend.get('counter')
          if (current === null) throw new Error('counter vanished')
          try {
            await backend.put('counter', bytes(String(Number(text(current.value)) + 1)), {
              ifMatch: current.meta.version,
            })
            done++
          } catch (error) {
            if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
          }
        }
      }),
    )
    const final = await open(namespace).get('counter')
    expect(text(final?.value ?? new Uint8Array())).toBe(String(workers * increments))
  })
})

describe('s3 backend on RGW: listing', () => {
  it('lists in UTF-8 byte order with prefix, paging and delimiter, hiding deleted keys', async () => {
    const backend = open(freshNamespace())
    const keys = ['b', 'a/1', 'a/2', 'a/3/x', '\u{E000}', '\u{1F600}', 'c d%#?', 'A', 'gone']
    for (const key of keys) await backend.put(key, bytes(key))
    await backend.delete('gone')
    await backend.acquireLease('lease-only', { holder: 'h', ttlMs: 60_000 })
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = await backend.list(cursor === undefined ? { limit: 2 } : { limit: 2, cursor })
      expect(page.entries.length).toBeLessThanOrEqual(2)
      seen.push(...page.entries.map((entry) => entry.key))
      cursor = page.cursor
    } while (cursor !== undefined)
    expect(seen).toEqual(['A', 'a/1', 'a/2', 'a/3/x', 'b', 'c d%#?', '\u{E000}', '\u{1F600}'])
    const grouped = await backend.list({ prefix: 'a/', delimiter: '/' })
    expect(grouped.entries.map((entry) => entry.key)).toEqual(['a/1', 'a/2'])
    expect(grouped.prefixes).toEqual(['a/3/'])
    const listed = (await backend.list({ prefix: 'b' })).entries[0]
    expect(listed?.version).toBe((await backend.head('b'))?.version)
  })

  it('round-trips 1024-byte keys although S3 caps the whole object key at 1024 bytes', async () => {
    const backend = open(freshNamespace())
    expect(backend.capabilities.maxKeyBytes).toBe(1024)
    const key = `${'k'.repeat(1024 - 1 - 2 * 300)}/${'é'.repeat(300)}`
    expect(new TextEncoder().encode(key).byteLength).toBe(1024)
    const first = await backend.put(key, bytes('long'))
    expect(text((await backend.get(key))?.value ?? new Uint8Array())).toBe('long')
    await backend.put(key, bytes('longer'), { ifMatch: first.version })
    expect(await errorCodeOf(backend.put(key, bytes('x'), { ifMatch: first.version }))).toBe(
      'PRECONDITION_FAILED',
    )
    expect((await backend.list()).entries.map((entry) => entry.key)).toEqual([key])
    expect(await backend.delete(key)).toBe(true)
    expect(await backend.get(key)).toBeNull()
    expect(await errorCodeOf(backend.put(`${key}k`, bytes('too long')))).toBe('INVALID_KEY')
  })

  it('lists long keys sharing a shortened head in byte order, with short keys around them', async () => {
    const namespace = freshNamespace()
    const backend = open(namespace)
    // Object names have 1024 - namespace - 1 bytes; keys above that minus 36 are shortened.
    const threshold = 1024 - namespace.length - 1 - 36
    const stem = `p/${'a'.repeat(threshold - 3)}` // threshold - 1 bytes
    const keys = [
      'p/b',
      `p/${'a'.repeat(100)}`,
      `${stem}a`, // exactly the threshold: stored under its own name
      `${stem}aa`, // one byte more: shortened, same head as the next ones
      `${stem}aa `,
      `${stem}aab`,
      `${stem}aa\u{E000}`,
      `${stem}aa\u{1F600}`,
      `${stem}a${'z'.repeat(1024 - threshold - 1)}`,
      `${stem}\u20ACzzz`, // a 3-byte character straddles the threshold
      `${stem}\u20ACyyy`,
      `${stem}\u00E9xxxxxxxxxx`,
      `${stem}b`,
    ]
    for (const key of [...keys].reverse()) await backend.put(key, bytes(key))
    await backend.delete(`${stem}aab`)
    const expected = sortUtf8(keys.filter((key) => key !== `${stem}aab`))
    for (const limit of [1, 2, 3, 1000]) {
      const seen: string[] = []
      let cursor: string | undefined
      do {
        const page = await backend.list(cursor === undefined ? { limit } : { limit, cursor })
        seen.push(...page.entries.map((entry) => entry.key))
        cursor = page.cursor
      } while (cursor !== undefined)
      expect(seen).toEqual(expected)
    }
    const longPrefix = `${stem}aa`
    const underPrefix = (await backend.list({ prefix: longPrefix })).entries.map((e) => e.key)
    expect(underPrefix).toEqual(expected.filter((key) => key.startsWith(longPrefix)))
    expect(underPrefix.length).toBe(4)
    for (const key of expected) {
      expect(text((await backend.get(key))?.value ?? new Uint8Array())).toBe(key)
    }
  })
})

describe('s3 backend on RGW: leases and fencing', () => {
  it('fences writes, survives delete, and expires on the host clock', async () => {
    const clock = createManualClock()
    const namespace = freshNamespace()
    const a = open(namespace, clock.now)
    const b = open(namespace, clock.now)
    const lease = await a.acquireLease('job', { holder: 'a', ttlMs: 1000 })
    expect(await errorCodeOf(b.acquireLease('job', { holder: 'b', ttlMs: 1000 }))).toBe(
      'LEASE_HELD',
    )
    expect(await errorCodeOf(b.put('job', bytes('x')))).toBe('LEASE_HELD')
    await a.put('job', bytes('by a'), { lease })
    await a.delete('job', { lease })
    clock.advance(1001)
    expect(await errorCodeOf(a.put('job', bytes('stale'), { lease }))).toBe('LEASE_LOST')
    expect(await errorCodeOf(a.renewLease(lease))).toBe('LEASE_LOST')
    const next = await b.acquireLease('job', { holder: 'b', ttlMs: 1000 })
    expect(next.token).toBeGreaterThan(lease.token)
    expect(await a.releaseLease(lease)).toBe(false)
    expect((await b.getLease('job'))?.holder).toBe('b')
    expect(await b.releaseLease(next)).toBe(true)
    const third = await a.acquireLease('job', { holder: 'a', ttlMs: 1000 })
    expect(third.token).toBeGreaterThan(next.token)
    expect((await a.list()).entries).toEqual([])
  })
})
