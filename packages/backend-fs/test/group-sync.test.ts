import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createDirSync } from '../src/dir-sync.js'
import { createFsBackend } from '../src/index.js'
import { exitOf, startChild, tempRoot, untext } from './helpers.js'

// Concurrent writes share the records directory's fsync (issue 18). These
// tests prove the rule that keeps that durable, and that no acknowledged
// write is lost when the writing process is killed mid-load.

describe('the shared directory fsync', () => {
  it('resolves each waiter only after an fsync that started after it asked', async () => {
    const dir = join(tempRoot(), 'd')
    mkdirSync(dir)
    const events: string[] = []
    const sync = createDirSync(dir, (batch) => events.push(`start ${batch}`))
    expect(sync.idle).toBe(true)
    const first = sync.afterRename().then(() => events.push('first'))
    // Asked while the first fsync runs: it may not count for these two.
    const second = sync.afterRename().then(() => events.push('second'))
    const third = sync.afterRename().then(() => events.push('third'))
    expect(sync.idle).toBe(false)
    await Promise.all([first, second, third])
    // One fsync for the first waiter, one more for the two that asked while it ran (the next
    // batch starts as the first ends, before the first waiter's callback runs).
    expect(events).toEqual(['start 1', 'start 2', 'first', 'second', 'third'])
    expect(sync.idle).toBe(true)
  })

  it('rejects every waiter of a batch whose fsync fails', async () => {
    const sync = createDirSync(join(tempRoot(), 'missing'))
    const outcomes = await Promise.allSettled([sync.afterRename(), sync.afterRename()])
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected'])
    expect(sync.idle).toBe(true)
  })

  it('loses no acknowledged write when the writer is SIGKILLed under 64 concurrent writes', async () => {
    const root = tempRoot()
    for (let round = 0; round < 3; round++) {
      const namespace = `load-${round}`
      const child = startChild('concurrent-load.ts', [root, namespace, '64'])
      const acked = new Map<string, number>()
      let buffer = ''
      let ready = false
      const enough = new Promise<void>((resolve, reject) => {
        child.stdout?.on('data', (chunk: Buffer) => {
          buffer += chunk.toString('utf8')
          const lines = buffer.split('\n')
          buffer = lines.pop() ?? ''
          for (const line of lines) {
            if (line === 'ready') ready = true
            const [tag, key, value] = line.split(' ')
            if (tag !== 'ack' || key === undefined || value === undefined) continue
            acked.set(key, Math.max(acked.get(key) ?? -1, Number(value)))
            // Kill at a different depth each round, always mid-load.
            if (acked.size >= 200 + round * 150) resolve()
          }
        })
        child.once('exit', (code) => reject(new Error(`load child exited early (${code})`)))
      })
      await enough
      child.kill('SIGKILL')
      expect(await exitOf(child)).toBe('SIGKILL')
      expect(ready).toBe(true)
      const backend = createFsBackend({ root, namespace })
      let overwrites = 0
      for (const [key, value] of acked) {
        const stored = await backend.get(key)
        expect(stored, key).not.toBeNull()
        const read = Number(untext(stored?.value ?? new Uint8Array()))
        if (key.startsWith('c/')) expect(read, key).toBe(value)
        else {
          // A later, unacknowledged overwrite may have landed too; an older value may not.
          expect(read, key).toBeGreaterThanOrEqual(value)
          overwrites++
        }
      }
      expect(overwrites).toBe(64)
      await backend.close()
    }
  }, 120_000)
})
