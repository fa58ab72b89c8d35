import { readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createSqliteBackend } from '../src/index.js'
import { type Child, startFixture, tempDir } from './helpers.js'

const PROCESSES = 4
const INCREMENTS = 100
const CRASH_CYCLES = 4

describe('several processes on one file', () => {
  let dir: { dir: string; remove: () => void }
  let path: string
  const children: Child[] = []

  beforeEach(() => {
    dir = tempDir()
    path = join(dir.dir, 'state.db')
  })
  afterEach(async () => {
    for (const child of children.splice(0)) {
      child.kill('SIGKILL')
      await child.done
    }
    dir.remove()
  })

  it(`ends a ${PROCESSES}-process compare-and-set race at exactly N·M`, async () => {
    // Create the schema first so the children race on the counter, not on the migration.
    await createSqliteBackend({ path }).close()
    for (let i = 0; i < PROCESSES; i++) {
      children.push(startFixture('cas-worker.ts', [path, 'race', 'counter', String(INCREMENTS)]))
    }
    await Promise.all(children.map((child) => child.waitFor(/^ready$/m)))
    writeFileSync(`${path}.go`, '')
    const results = await Promise.all(children.map((child) => child.done))
    let conflicts = 0
    for (const result of results) {
      expect(result.stderr).toBe('')
      expect(result.code).toBe(0)
      conflicts += Number(/^done (\d+)$/m.exec(result.stdout)?.[1])
    }
    const backend = createSqliteBackend({ path, namespace: 'race' })
    const counter = await backend.get('counter')
    await backend.close()
    expect(new TextDecoder().decode(counter?.value)).toBe(String(PROCESSES * INCREMENTS))
    // The race really happened: some writers lost a compare-and-set at least once.
    expect(conflicts).toBeGreaterThan(0)
  }, 120_000)

  it(`lets ${PROCESSES} processes create the same new file at once, each using the one complete database`, async () => {
    // No file yet: every child may find it missing and create it; exactly one link wins.
    for (let i = 0; i < PROCESSES; i++) {
      children.push(startFixture('cas-worker.ts', [path, 'create', 'counter', '10']))
    }
    await Promise.all(children.map((child) => child.waitFor(/^ready$/m)))
    writeFileSync(`${path}.go`, '')
    for (const result of await Promise.all(children.map((child) => child.done))) {
      expect(result.stderr).toBe('')
      expect(result.code).toBe(0)
    }
    const backend = createSqliteBackend({ path, namespace: 'create' })
    const counter = await backend.get('counter')
    await backend.close()
    expect(new TextDecoder().decode(counter?.value)).toBe(String(PROCESSES * 10))
    expect(readdirSync(dir.dir).filter((name) => name.includes('.creating'))).toEqual([])
  }, 120_000)

  it('passes PRAGMA integrity_check and keeps every acknowledged write after SIGKILLed writers', async () => {
    const acked = new Map<string, number>()
    for (let cycle = 0; cycle < CRASH_CYCLES; cycle++) {
      const ids = [`c${cycle}a`, `c${cycle}b`, 'steady']
      const running = ids.map((id) => ({
        id,
        child: startFixture('crash-writer.ts', [path, 'crash', id]),
      }))
      children.push(...running.map((r) => r.child))
      // Let every writer get going, then kill them mid-write.
      await Promise.all(running.map(({ child }) => child.waitFor(/(acked \d+\n[\s\S]*){3}/)))
      await new Promise((resolve) => setTimeout(resolve, 50 + cycle * 40))
      for (const { child } of running) child.kill('SIGKILL')
      for (const { id, child } of running) {
        const result = await child.done
        expect(result.signal, `${id} ended on its own: ${result.stderr}`).toBe('SIGKILL')
        const numbers = [...result.stdout.matchAll(/acked (\d+)/g)].map((m) => Number(m[1]))
        acked.set(id, Math.max(acked.get(id) ?? 0, ...numbers))
      }
      children.length = 0

      const raw = new Database(path)
      expect(raw.pragma('integrity_check', { simple: true })).toBe('ok')
      raw.close()
      const backend = createSqliteBackend({ path, namespace: 'crash' })
      for (const [id, last] of acked) {
        const stored = Number(new TextDecoder().decode((await backend.get(`counter/${id}`))?.value))
        // The acknowledged value, or the one write in flight when the kill landed.
        expect([last, last + 1]).toContain(stored)
      }
      await backend.list({ prefix: 'bulk/' })
      await backend.close()
    }
  }, 120_000)
})
