import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createSqliteBackend } from '../src/index.js'
import { GROUP_COMMIT_CRASH_CYCLES } from './crash-cycles.js'
import { type Child, startFixture, tempDir } from './helpers.js'

const CYCLES = GROUP_COMMIT_CRASH_CYCLES
const BATCH = 8

describe('group commit under kill -9', () => {
  let dir: { dir: string; remove: () => void }
  const children: Child[] = []
  beforeEach(() => {
    dir = tempDir()
  })
  afterEach(async () => {
    for (const child of children.splice(0)) {
      child.kill('SIGKILL')
      await child.done
    }
    dir.remove()
  })

  it(`keeps every acknowledged batch and never shows part of one, over ${CYCLES} SIGKILLs`, async () => {
    const path = `${dir.dir}/state.db`
    let partialSeen = 0
    let batchesSeen = 0
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const id = `c${cycle}`
      const child = startFixture('batch-writer.ts', [path, 'crash', id, String(BATCH)])
      children.push(child)
      await child.waitFor(/(acked w\d \d+\n[\s\S]*){4}/)
      await new Promise((resolve) => setTimeout(resolve, 20 + ((cycle * 37) % 90)))
      child.kill('SIGKILL')
      const result = await child.done
      children.length = 0
      expect(result.signal, `the writer ended on its own: ${result.stderr}`).toBe('SIGKILL')
      const acked = new Map<string, number>()
      for (const [, name, n] of result.stdout.matchAll(/acked (w\d) (\d+)/g)) {
        acked.set(name as string, Math.max(acked.get(name as string) ?? -1, Number(n)))
      }

      const raw = new Database(path, { readonly: true })
      expect(raw.pragma('integrity_check', { simple: true })).toBe('ok')
      raw.close()
      const backend = createSqliteBackend({ path, namespace: 'crash' })
      const counts = new Map<string, number>()
      let cursor: string | undefined
      do {
        const page = await backend.list({ prefix: `batch/${id}/`, ...(cursor ? { cursor } : {}) })
        for (const entry of page.entries) {
          const batch = entry.key.split('/').slice(0, 4).join('/')
          counts.set(batch, (counts.get(batch) ?? 0) + 1)
        }
        cursor = page.cursor ?? undefined
      } while (cursor !== undefined)
      await backend.close()
      for (const [batch, count] of counts) {
        batchesSeen++
        if (count !== BATCH) partialSeen++
        expect(count, `batch ${batch} is partly stored`).toBe(BATCH)
      }
      for (const [name, last] of acked) {
        for (let n = 0; n <= last; n++) {
          expect(counts.get(`batch/${id}/${name}/${n}`), `acknowledged ${name} ${n} lost`).toBe(
            BATCH,
          )
        }
      }
    }
    expect(partialSeen).toBe(0)
    expect(batchesSeen).toBeGreaterThanOrEqual(CYCLES * 8)
  }, 300_000)
})
