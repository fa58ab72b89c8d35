import { existsSync, readdirSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createManualClock, openBackend } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import {
  createBackendFromUrl,
  createFsBackend,
  fsOptionsSchema,
  layoutOf,
  rootFromFileUrl,
} from '../src/index.js'
import { expectCode, tempRoot, text, untext } from './helpers.js'

describe('fs backend options and URLs', () => {
  it('parses file: URLs, relative to the working directory or absolute', () => {
    expect(rootFromFileUrl('file:./.agent-state')).toBe('./.agent-state')
    expect(rootFromFileUrl('file:state')).toBe('state')
    expect(rootFromFileUrl('file:../up/state')).toBe('../up/state')
    expect(rootFromFileUrl('file:/abs/state')).toBe('/abs/state')
    expect(rootFromFileUrl('file:///abs/state')).toBe('/abs/state')
    expect(rootFromFileUrl('file:///abs/with%20space')).toBe('/abs/with space')
    expect(rootFromFileUrl('file://localhost/abs/state')).toBe('/abs/state')
    for (const bad of [
      'file:',
      'file://otherhost/x',
      'file:./x?fsync=0',
      'memory:',
      'file:./x#y',
    ]) {
      expect(() => rootFromFileUrl(bad), bad).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      )
    }
  })

  it('opens through openBackend with relative and absolute file URLs', async () => {
    const root = tempRoot()
    const rel = relative(process.cwd(), join(root, 'rel'))
    const viaRelative = await openBackend(`file:${rel}`, { namespace: 'n1' })
    await viaRelative.put('k', text('relative'))
    expect(existsSync(layoutOf(resolve(rel), 'n1').recordsDir)).toBe(true)
    await viaRelative.close()

    const viaAbsolute = await openBackend(pathToFileURL(join(root, 'rel')).href, {
      namespace: 'n1',
    })
    expect(viaAbsolute.name).toBe('fs')
    expect(untext((await viaAbsolute.get('k'))?.value ?? new Uint8Array())).toBe('relative')
    await viaAbsolute.close()

    const viaFactory = createBackendFromUrl(`file:${join(root, 'rel')}`, {
      namespace: 'n1',
      fsync: false,
    })
    expect(viaFactory.capabilities.durable).toBe(false)
    expect(untext((await viaFactory.get('k'))?.value ?? new Uint8Array())).toBe('relative')
    await viaFactory.close()
  })

  it('reports every bad URL with the shared shape: backend fs, field url, the problem', () => {
    const cases: Array<[string, string]> = [
      ['file:', 'it names no directory'],
      ['file:./x?fsync=0', 'unknown query parameter "fsync"'],
      ['file:./x?', 'queries are not supported; pass options instead'],
      ['file:./x#y', 'fragments are not supported'],
      ['memory:', 'it must start with "file:"'],
    ]
    for (const [url, problem] of cases) {
      let caught: unknown
      try {
        rootFromFileUrl(url)
      } catch (error) {
        caught = error
      }
      expect(caught, url).toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: `Invalid fs backend URL ${JSON.stringify(url)}: ${problem}`,
        context: { backend: 'fs', field: 'url', url, issues: [{ field: 'url', message: problem }] },
      })
    }
  })

  it('names the bad field, and rejects an unknown option (a typo) instead of ignoring it', () => {
    let caught: unknown
    try {
      createFsBackend({ root: '/x', lockBreakMs: -1 })
    } catch (error) {
      caught = error
    }
    expect(caught).toMatchObject({
      code: 'INVALID_ARGUMENT',
      context: { backend: 'fs', field: 'lockBreakMs' },
    })
    expect((caught as Error).message).toMatch(/^Invalid fs backend option lockBreakMs: /)
    caught = undefined
    try {
      createFsBackend({ root: '/x', fsyncc: false } as never)
    } catch (error) {
      caught = error
    }
    expect(caught).toMatchObject({
      code: 'INVALID_ARGUMENT',
      context: { backend: 'fs', field: 'options' },
    })
    expect(JSON.stringify((caught as { context: unknown }).context)).toContain('fsyncc')
  })

  it('validates options with INVALID_ARGUMENT and applies defaults', () => {
    const parsed = fsOptionsSchema.parse({ root: '/x' })
    expect(parsed).toMatchObject({
      namespace: 'default',
      fsync: true,
      lockTimeoutMs: 10_000,
      lockBreakMs: 250,
    })
    for (const bad of [
      { root: '' },
      { root: '/x', namespace: '.hidden' },
      { root: '/x', namespace: 'a/b' },
      { root: '/x', fsync: 'yes' },
      { root: '/x', lockTimeoutMs: -1 },
      { root: '/x', lockBreakMs: -1 },
      { root: '/x', lockBreakMs: 1.5 },
      { root: '/x', clock: 5 },
    ]) {
      expect(() => createFsBackend(bad as never), JSON.stringify(bad)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      )
    }
    const backend = createFsBackend({ root: '/x' })
    expect(backend.capabilities).toEqual({
      durable: true,
      multiProcess: true,
      multiHost: false,
      leaseClock: 'host',
      maxKeyBytes: 1024,
      maxValueBytes: 64 * 1024 * 1024,
      changeNotification: { mode: 'push', maxDelayMs: 500 },
    })
  })

  it('keeps namespaces side by side under one root; destroy removes only its own', async () => {
    const root = tempRoot()
    const a = createFsBackend({ root, namespace: 'a' })
    const b = createFsBackend({ root, namespace: 'b' })
    await a.put('k', text('A'))
    await b.put('k', text('B'))
    await a.acquireLease('k', { holder: 'x', ttlMs: 60_000 })
    expect(untext((await a.get('k'))?.value ?? new Uint8Array())).toBe('A')
    expect(await b.getLease('k')).toBeNull()
    await a.destroy?.()
    expect(readdirSync(root)).toEqual(['b'])
    expect(await a.get('k')).toBeNull()
    expect(untext((await b.get('k'))?.value ?? new Uint8Array())).toBe('B')
    // A destroyed namespace can be written again.
    await a.put('k', text('again'))
    expect((await a.list()).entries.map((entry) => entry.key)).toEqual(['k'])
    await a.close()
    await b.close()
  })

  it('keeps values, leases and fencing tokens across reopen, on the injected clock', async () => {
    const root = tempRoot()
    const clock = createManualClock(1_000_000)
    const first = createFsBackend({ root, clock: clock.now })
    const meta = await first.put('k', text('v1'))
    expect(meta.updatedAt).toBe(1_000_000)
    const lease = await first.acquireLease('k', { holder: 'a', ttlMs: 1000 })
    await first.close()
    await expectCode(first.get('k'), 'CLOSED')

    const second = createFsBackend({ root, clock: clock.now })
    expect((await second.head('k'))?.version).toBe(meta.version)
    expect(await second.getLease('k')).toEqual(lease)
    clock.advance(1000)
    expect(await second.getLease('k')).toBeNull()
    await expectCode(second.put('k', text('stale'), { lease }), 'LEASE_LOST')
    await second.delete('k')
    const next = await second.acquireLease('k', { holder: 'b', ttlMs: 1000 })
    expect(next.token).toBeGreaterThan(lease.token)
    await second.close()
  })

  it('honours maxValueBytes', async () => {
    const backend = createFsBackend({ root: tempRoot(), maxValueBytes: 16 })
    await backend.put('k', new Uint8Array(16))
    await expectCode(backend.put('k', new Uint8Array(17)), 'VALUE_TOO_LARGE')
    await backend.close()
  })
})
