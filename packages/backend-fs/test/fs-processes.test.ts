import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createFsBackend, fileNameOf, layoutOf } from '../src/index.js'
import { TEMP_PREFIX } from '../src/key-paths.js'
import { exitOf, expectCode, startChild, tempRoot, text, untext, waitForLine } from './helpers.js'

/** A namespace whose directories exist, for fixtures that work below the backend. */
async function preparedLayout(root: string, namespace: string) {
  const backend = createFsBackend({ root, namespace })
  await backend.put('warm-up', text('x'))
  await backend.close()
  return layoutOf(root, namespace)
}

describe('fs backend across processes', () => {
  it('4 processes × 25 compare-and-set increments end at exactly 100', async () => {
    const root = tempRoot()
    const processes = 4
    const increments = 25
    const startAt = String(Date.now() + 2500)
    const children = Array.from({ length: processes }, () =>
      startChild('cas-increment.ts', [root, 'race', 'counter', String(increments), startAt]),
    )
    const lines = await Promise.all(children.map((child) => waitForLine(child, 'done')))
    expect(await Promise.all(children.map(exitOf))).toEqual(children.map(() => 0))
    const retries = lines.reduce((sum, line) => sum + Number(line.split(' ')[1]), 0)
    const backend = createFsBackend({ root, namespace: 'race' })
    const final = await backend.get('counter')
    expect(untext(final?.value ?? new Uint8Array())).toBe(String(processes * increments))
    // The race was real: compare-and-sets were lost and retried.
    expect(retries).toBeGreaterThan(0)
    console.log(`cross-process CAS: ${processes * increments} increments, ${retries} lost races`)
    await backend.close()
  }, 60_000)

  it('a lock held by a live process blocks writers until lockTimeoutMs', async () => {
    const root = tempRoot()
    const { locksDir, recordsDir } = await preparedLayout(root, 'held')
    const child = startChild('hold-lock.ts', [locksDir, recordsDir, fileNameOf('k')])
    try {
      await waitForLine(child, 'locked')
      const backend = createFsBackend({ root, namespace: 'held', lockTimeoutMs: 300 })
      const started = performance.now()
      const error = await expectCode(backend.put('k', text('x')), 'UNAVAILABLE')
      expect(error.retryable).toBe(true)
      expect(error.context.holderPid).toBe(child.pid)
      expect(performance.now() - started).toBeGreaterThanOrEqual(290)
      expect(await backend.get('k')).toBeNull()
      // Other keys are not affected.
      await backend.put('other', text('y'))
      await backend.close()
    } finally {
      child.kill('SIGKILL')
      await exitOf(child)
    }
  }, 30_000)

  it('a lock left by a SIGKILLed process does not wedge the others', async () => {
    const root = tempRoot()
    const { locksDir, recordsDir } = await preparedLayout(root, 'crash')
    const child = startChild('hold-lock.ts', [locksDir, recordsDir, fileNameOf('k')])
    await waitForLine(child, 'locked')
    child.kill('SIGKILL')
    expect(await exitOf(child)).toBe('SIGKILL')
    const backend = createFsBackend({ root, namespace: 'crash', lockTimeoutMs: 5000 })
    const started = performance.now()
    await backend.put('k', text('after crash'))
    expect(performance.now() - started).toBeLessThan(1000)
    expect(untext((await backend.get('k'))?.value ?? new Uint8Array())).toBe('after crash')
    // The dead generation stays (it is what makes breaking it exclusive); ours is released.
    expect(readdirSync(locksDir).filter((name) => name.startsWith(fileNameOf('k')))).toEqual([
      `${fileNameOf('k')}.1`,
    ])
    await backend.put('k', text('again'))
    await backend.close()
  }, 30_000)

  it('removes temp files of dead processes and old unidentifiable ones, keeps live ones', async () => {
    const root = tempRoot()
    const { recordsDir } = await preparedLayout(root, 'temps')
    const dead = startChild('leave-temp.ts', [recordsDir])
    const deadName = (await waitForLine(dead, 'temp ')).slice('temp '.length)
    dead.kill('SIGKILL')
    await exitOf(dead)
    const live = startChild('leave-temp.ts', [recordsDir])
    try {
      const liveName = (await waitForLine(live, 'temp ')).slice('temp '.length)
      const oldForeign = `${TEMP_PREFIX}garbage-old`
      const youngForeign = `${TEMP_PREFIX}garbage-young`
      writeFileSync(join(recordsDir, oldForeign), 'x')
      writeFileSync(join(recordsDir, youngForeign), 'x')
      const past = new Date(Date.now() - 2 * 3_600_000)
      utimesSync(join(recordsDir, oldForeign), past, past)
      expect(statSync(join(recordsDir, deadName)).isFile()).toBe(true)

      const backend = createFsBackend({ root, namespace: 'temps' })
      await backend.get('anything') // opening the namespace sweeps
      const left = readdirSync(recordsDir).filter((name) => name.startsWith(TEMP_PREFIX))
      expect(left.sort()).toEqual([liveName, youngForeign].sort())
      expect((await backend.list()).entries.map((entry) => entry.key)).toEqual(['warm-up'])
      await backend.close()
    } finally {
      live.kill('SIGKILL')
      await exitOf(live)
    }
  }, 30_000)
})
