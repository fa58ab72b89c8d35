import type { Backend, PutOptions } from '@agent-state/core'
import { createMemoryBackend } from '@agent-state/memory'
import { describe, expect, it } from 'vitest'
import { copyKey } from '../src/commands/copy-key.js'

const text = (s: string) => new TextEncoder().encode(s)
const options = { dryRun: false, checksum: false, includeLeased: false, overwriteNewer: false }

/** The destination, with another writer landing between the copy's read and its write. */
function racing(dest: Backend, key: string, value: string): Backend {
  let raced = false
  return new Proxy(dest, {
    get(target, name, receiver) {
      if (name === 'put') {
        return async (k: string, v: Uint8Array, o?: PutOptions) => {
          if (!raced && k === key) {
            raced = true
            await target.put(key, text(value), { writer: { writerId: 'someone-else' } })
          }
          return target.put(k, v, o)
        }
      }
      const member = Reflect.get(target, name, receiver)
      return typeof member === 'function' ? member.bind(target) : member
    },
  }) as Backend
}

describe('copyKey writes conditionally, never blindly', () => {
  it('a key created at the destination meanwhile is a conflict, and its value is kept', async () => {
    const from = createMemoryBackend({ namespace: `from-${Math.random().toString(36).slice(2)}` })
    const to = createMemoryBackend({ namespace: `to-${Math.random().toString(36).slice(2)}` })
    await from.put('k', text('source'), { writer: { writerId: 'w' } })
    const report = await copyKey(from, racing(to, 'k', 'theirs'), 'k', options)
    expect(report).toMatchObject({ key: 'k', action: 'conflict', check: 'differs' })
    expect(new TextDecoder().decode((await to.get('k'))?.value)).toBe('theirs')
  })

  it('a key replaced at the destination meanwhile is a conflict, and its value is kept', async () => {
    const from = createMemoryBackend({ namespace: `from-${Math.random().toString(36).slice(2)}` })
    const to = createMemoryBackend({ namespace: `to-${Math.random().toString(36).slice(2)}` })
    await to.put('k', text('old'), { writer: { writerId: 'w' } })
    await new Promise((resolve) => setTimeout(resolve, 5))
    await from.put('k', text('source'), { writer: { writerId: 'w' } })
    const report = await copyKey(from, racing(to, 'k', 'theirs'), 'k', options)
    expect(report).toMatchObject({ key: 'k', action: 'conflict', check: 'differs' })
    expect(new TextDecoder().decode((await to.get('k'))?.value)).toBe('theirs')
  })
})
