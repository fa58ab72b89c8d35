import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createFsBackend, fileNameOf, layoutOf } from '../src/index.js'
import { TEMP_PREFIX } from '../src/key-layout.js'
import { exitOf, expectCode, startChild, tempRoot, text, untext, waitForLine } from './helpers.js'

// A delete of a key that never had a lease removes its record file outright
// (core's optional RecordStore.remove); a key that ever had a lease keeps a
// tombstone with its fencing counter (issue 18).

async function waitStopped(pid: number): Promise<void> {
  const { readFileSync } = await import('node:fs')
  for (let i = 0; i < 500; i++) {
    if (/^\d+ \(.*\) T /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`process ${pid} did not stop`)
}

const temps = (dir: string) => readdirSync(dir).filter((name) => name.startsWith(TEMP_PREFIX))

describe('fs delete without a tombstone', () => {
  it('removes the record file of a never-leased key; a re-create never repeats a version', async () => {
    const root = tempRoot()
    const backend = createFsBackend({ root, namespace: 'rm' })
    const { recordsDir, locksDir } = layoutOf(root, 'rm')
    const file = join(recordsDir, fileNameOf('k'))
    const seen = new Set<string>()
    for (let round = 0; round < 20; round++) {
      const meta = await backend.put('k', text(`v${round}`), { ifNoneMatch: '*' })
      expect(seen.has(meta.version)).toBe(false)
      seen.add(meta.version)
      expect(existsSync(file)).toBe(true)
      expect(await backend.delete('k')).toBe(true)
      expect(existsSync(file)).toBe(false)
      expect(await backend.get('k')).toBeNull()
      // A compare-and-set on the removed record's version must fail, also once the key exists again.
      await expectCode(
        backend.put('k', text('stale'), { ifMatch: meta.version }),
        'PRECONDITION_FAILED',
      )
    }
    expect(await backend.delete('k')).toBe(false)
    // Only the instance's (empty) removal directory, which close removes.
    expect(temps(recordsDir)).toHaveLength(1)
    expect(readdirSync(recordsDir)).toEqual(temps(recordsDir))
    expect(readdirSync(locksDir)).toEqual([])
    expect((await backend.list()).entries).toEqual([])
    await backend.close()
    expect(readdirSync(recordsDir)).toEqual([])
  })

  it('keeps a tombstone, and the fencing counter, for a key that ever had a lease', async () => {
    const root = tempRoot()
    const backend = createFsBackend({ root, namespace: 'fence' })
    const file = join(layoutOf(root, 'fence').recordsDir, fileNameOf('k'))
    const lease = await backend.acquireLease('k', { holder: 'a', ttlMs: 60_000 })
    await backend.put('k', text('v'), { lease })
    expect(await backend.releaseLease(lease)).toBe(true)
    expect(await backend.delete('k')).toBe(true)
    expect(existsSync(file)).toBe(true) // the tombstone
    const reopened = createFsBackend({ root, namespace: 'fence' })
    const next = await reopened.acquireLease('k', { holder: 'b', ttlMs: 60_000 })
    expect(next.token).toBeGreaterThan(lease.token)
    await reopened.close()
    await backend.close()
  })

  it('a remover stopped in its slot is broken after lockBreakMs and never removes the newer record', async () => {
    const root = tempRoot()
    const setup = createFsBackend({ root, namespace: 'stop' })
    const before = (await setup.put('k', text('first'))).version
    await setup.close()
    const { locksDir, recordsDir } = layoutOf(root, 'stop')
    const child = startChild('stop-in-write.ts', [root, 'stop', 'k', 'checked', 'delete'])
    try {
      await waitForLine(child, 'stopping')
      await waitStopped(child.pid as number)
      expect(readdirSync(locksDir)).toHaveLength(1)
      const backend = createFsBackend({ root, namespace: 'stop', lockBreakMs: 300 })
      const started = performance.now()
      const mine = await backend.put('k', text('parent'), { ifMatch: before })
      expect(performance.now() - started).toBeGreaterThanOrEqual(290)
      child.kill('SIGCONT')
      expect(await waitForLine(child, 'outcome ')).toBe('outcome PRECONDITION_FAILED')
      expect(await exitOf(child)).toBe(0)
      const after = await backend.get('k')
      expect(untext(after?.value ?? new Uint8Array())).toBe('parent')
      expect(after?.meta.version).toBe(mine.version)
      expect(readdirSync(locksDir)).toEqual([])
      await backend.close()
      expect(temps(recordsDir)).toEqual([])
    } finally {
      child.kill('SIGKILL')
      await exitOf(child)
    }
  }, 30_000)

  it('a remover killed after moving the record away leaves a temp directory that is swept; the key is gone', async () => {
    const root = tempRoot()
    const setup = createFsBackend({ root, namespace: 'kill' })
    await setup.put('k', text('first'))
    await setup.close()
    const { recordsDir } = layoutOf(root, 'kill')
    const child = startChild('stop-in-write.ts', [root, 'kill', 'k', 'renamed', 'delete'])
    await waitForLine(child, 'stopping')
    child.kill('SIGKILL')
    expect(await exitOf(child)).toBe('SIGKILL')
    expect(temps(recordsDir)).toHaveLength(1)
    const backend = createFsBackend({ root, namespace: 'kill' })
    expect(await backend.get('k')).toBeNull() // opening the namespace sweeps the dead remover's directory
    expect(temps(recordsDir)).toEqual([])
    expect((await backend.list()).entries).toEqual([])
    await backend.put('k', text('again'), { ifNoneMatch: '*' })
    expect(untext((await backend.get('k'))?.value ?? new Uint8Array())).toBe('again')
    await backend.close()
  }, 30_000)
})
