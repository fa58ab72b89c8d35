import { randomInt } from 'node:crypto'
import { compareUtf8, isValidKey } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { invertId, KeyLayout, revertId } from '../src/index.js'

const ALPHABET = ['a', 'b', 'z', '0', '-', '~', '/', '.', 'é', '😀', '\u0000', ' ', '%']

function randomId(): string {
  let id = ''
  const length = randomInt(0, 6)
  for (let i = 0; i < length; i++) id += ALPHABET[randomInt(0, ALPHABET.length)]
  return id
}

describe('checkpoint id inversion', () => {
  it('ascending byte order of inverted ids is descending byte order of the ids, prefixes included', () => {
    for (let round = 0; round < 200; round++) {
      const ids = [...new Set(Array.from({ length: 12 }, randomId))]
      const byInverted = [...ids].sort((a, b) => compareUtf8(invertId(a), invertId(b)))
      const descending = [...ids].sort((a, b) => compareUtf8(b, a))
      expect(byInverted).toEqual(descending)
      for (const id of ids) expect(revertId(invertId(id), id)).toBe(id)
    }
    expect(compareUtf8(invertId('ab'), invertId('a'))).toBeLessThan(0)
  })

  it('every key of any id is a valid backend key under its thread', () => {
    const layout = new KeyLayout('lg')
    for (let round = 0; round < 200; round++) {
      const [thread, ns, id, task, channel] = Array.from({ length: 5 }, () => `x${randomId()}`)
      const keys = layout.checkpoint(thread as string, ns as string, id as string)
      const all = [
        keys.meta,
        keys.body,
        layout.write(keys, task as string, -1, 7),
        layout.blob(thread as string, ns as string, channel as string, 3.25),
        layout.owner(thread as string),
      ]
      for (const key of all) {
        expect(isValidKey(key), key).toBe(true)
        expect(key.startsWith(layout.thread(thread as string))).toBe(true)
      }
    }
  })
})
