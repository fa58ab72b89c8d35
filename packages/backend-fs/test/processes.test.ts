import { readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { createFsBackend, layoutOf } from '../src/index.js'
import { TEMP_PREFIX } from '../src/key-layout.js'
import { exitOf, startChild, tempRoot, text, untext, waitForLine } from './helpers.js'

async function headOf(root: string, namespace: string, key: string): Promise<string> {
  const backend = createFsBackend({ root, namespace })
  const meta = await backend.head(key)
  await backend.close()
  if (meta === null) throw new Error(`${key} is missing`)
  return meta.version
}

/** Resolves once `pid` is stopped (state T in /proc). */
async function waitStopped(pid: number): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    if (/^[Tt]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3))) return
    await sleep(1)
  }
  throw new Error(`process ${pid} did not stop`)
}

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
    const goFile = join(root, 'go')
    const children = Array.from({ length: processes }, () =>
      startChild('cas-increment.ts', [root, 'race', 'counter', String(increments), goFile]),
    )
    const done = children.map((child) => waitForLine(child, 'done'))
    await Promise.all(children.map((child) => waitForLine(child, 'ready')))
    writeFileSync(goFile, '')
    const lines = await Promise.all(done)
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

  it('a writer stopped in its commit slot delays a rival by lockBreakMs, then loses its compare-and-set', async () => {
    const root = tempRoot()
    const { locksDir, recordsDir } = await preparedLayout(root, 'stopped')
    const before = await headOf(root, 'stopped', 'warm-up')
    const child = startChild('stop-in-write.ts', [root, 'stopped', 'warm-up', 'checked'])
    try {
      await waitForLine(child, 'stopping')
      await waitStopped(child.pid as number)
      const backend = createFsBackend({ root, namespace: 'stopped', lockBreakMs: 300 })
      const started = performance.now()
      // The same compare-and-set as the stopped child's, which already passed its version check.
      const mine = await backend.put('warm-up', text('parent'), { ifMatch: before })
      const waited = performance.now() - started
      expect(waited).toBeGreaterThanOrEqual(290)
      expect(waited).toBeLessThan(5000)
      child.kill('SIGCONT')
      expect(await waitForLine(child, 'outcome ')).toBe('outcome PRECONDITION_FAILED')
      expect(await exitOf(child)).toBe(0)
      const after = await backend.get('warm-up')
      expect(untext(after?.value ?? new Uint8Array())).toBe('parent')
      expect(after?.meta.version).toBe(mine.version)
      expect(readdirSync(locksDir)).toEqual([])
      expect(readdirSync(recordsDir).filter((name) => name.startsWith(TEMP_PREFIX))).toEqual([])
      await backend.close()
    } finally {
      child.kill('SIGKILL')
      await exitOf(child)
    }
  }, 30_000)

  it('a commit slot left by a SIGKILLed writer is broken at once', async () => {
    const root = tempRoot()
    const { locksDir, recordsDir } = await preparedLayout(root, 'crash')
    const before = await headOf(root, 'crash', 'warm-up')
    const child = startChild('stop-in-write.ts', [root, 'crash', 'warm-up', 'checked'])
    await waitForLine(child, 'stopping')
    child.kill('SIGKILL')
    expect(await exitOf(child)).toBe('SIGKILL')
    expect(readdirSync(locksDir)).toHaveLength(1)
    // A live holder would be waited for a minute: a dead one is not waited for at all.
    const backend = createFsBackend({ root, namespace: 'crash', lockBreakMs: 60_000 })
    const started = performance.now()
    await backend.put('warm-up', text('after crash'), { ifMatch: before })
    expect(performance.now() - started).toBeLessThan(1000)
    expect(untext((await backend.get('warm-up'))?.value ?? new Uint8Array())).toBe('after crash')
    // The dead writer's slot and temp file are gone with the chain it was in.
    expect(readdirSync(locksDir)).toEqual([])
    expect(readdirSync(recordsDir).filter((name) => name.startsWith(TEMP_PREFIX))).toEqual([])
    await backend.close()
  }, 30_000)

  it('a create takes no slot: a creator frozen with its temp file written blocks nobody and loses when it wakes', async () => {
    const root = tempRoot()
    const { locksDir, recordsDir } = await preparedLayout(root, 'create')
    const child = startChild('stop-in-write.ts', [root, 'create', 'fresh', 'temp-written'])
    try {
      await waitForLine(child, 'stopping')
      await waitStopped(child.pid as number)
      expect(readdirSync(locksDir)).toEqual([])
      // lockBreakMs of a minute: a slot held by the frozen creator would make this wait.
      const backend = createFsBackend({ root, namespace: 'create', lockBreakMs: 60_000 })
      const started = performance.now()
      await backend.put('fresh', text('parent'), { ifNoneMatch: '*' })
      expect(performance.now() - started).toBeLessThan(1000)
      child.kill('SIGCONT')
      // Its link() finds the parent's record: it never overwrites it.
      expect(await waitForLine(child, 'outcome ')).toBe('outcome PRECONDITION_FAILED')
      expect(await exitOf(child)).toBe(0)
      expect(untext((await backend.get('fresh'))?.value ?? new Uint8Array())).toBe('parent')
      expect(readdirSync(recordsDir).filter((name) => name.startsWith(TEMP_PREFIX))).toEqual([])
      await backend.close()
    } finally {
      child.kill('SIGKILL')
      await exitOf(child)
    }
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
