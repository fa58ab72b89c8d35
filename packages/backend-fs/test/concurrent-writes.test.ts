import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { type Backend, isAgentStateError } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { createFsBackend } from '../src/index.js'
import { tempRoot, text, untext } from './helpers.js'

/** Adds one to the counter at `key` with compare-and-set, retrying lost races. */
async function increment(backend: Backend, key: string): Promise<void> {
  for (;;) {
    const current = await backend.get(key)
    const next = text(String(Number(untext(current?.value ?? text('0'))) + 1))
    try {
      if (current === null) await backend.put(key, next, { ifNoneMatch: '*' })
      else await backend.put(key, next, { ifMatch: current.meta.version })
      return
    } catch (error) {
      if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
    }
  }
}

describe('concurrent writes of one process (slots held across awaits on the thread pool)', () => {
  it('24 concurrent compare-and-set increments over two instances of one thread end at exactly 24', async () => {
    const root = tempRoot()
    const a = createFsBackend({ root, namespace: 'ns' })
    const b = createFsBackend({ root, namespace: 'ns' })
    await Promise.all(
      Array.from({ length: 24 }, (_, index) => increment(index % 2 === 0 ? a : b, 'counter')),
    )
    expect(untext((await a.get('counter'))?.value ?? text(''))).toBe('24')
    await a.close()
    await b.close()
  }, 120_000)

  it('concurrent unconditional puts of a few keys leave every key at one of its writes, and no slot behind', async () => {
    const root = tempRoot()
    const backend = createFsBackend({ root, namespace: 'ns' })
    const writes = Array.from({ length: 96 }, (_, index) => ({
      key: `k${index % 4}`,
      value: `v${index}`,
    }))
    const metas = await Promise.all(writes.map(({ key, value }) => backend.put(key, text(value))))
    for (let key = 0; key < 4; key++) {
      const stored = await backend.get(`k${key}`)
      const index = metas.findIndex((meta) => meta.version === stored?.meta.version)
      expect(
        index,
        `k${key} holds the value of one of its acknowledged puts`,
      ).toBeGreaterThanOrEqual(0)
      expect(untext(stored?.value ?? text(''))).toBe(writes[index]?.value)
    }
    expect(readdirSync(join(root, 'ns', 'locks'))).toEqual([])
    expect(readdirSync(join(root, 'ns', 'records')).filter((name) => name.startsWith('.'))).toEqual(
      [],
    )
    await backend.close()
  }, 120_000)
})
