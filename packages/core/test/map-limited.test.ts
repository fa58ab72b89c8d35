import { describe, expect, it } from 'vitest'
import { mapLimited } from '../src/index.js'

describe('mapLimited', () => {
  it('keeps order and never runs more than the limit at once', async () => {
    let running = 0
    let most = 0
    const results = await mapLimited([5, 1, 4, 2, 3, 0], 2, async (n) => {
      running++
      most = Math.max(most, running)
      await new Promise((resolve) => setTimeout(resolve, n))
      running--
      return n * 10
    })
    expect(results).toEqual([50, 10, 40, 20, 30, 0])
    expect(most).toBe(2)
  })

  it('resolves an empty list', async () => {
    expect(await mapLimited([], 4, async () => 1)).toEqual([])
  })

  it('rejects with the first failure and starts nothing after it', async () => {
    const started: number[] = []
    const run = mapLimited([0, 1, 2, 3, 4, 5], 2, async (n) => {
      started.push(n)
      // Item 1 fails while item 0 is still running: item 0's lane must then stop.
      await new Promise((resolve) => setTimeout(resolve, n === 1 ? 5 : 30))
      if (n === 1) throw new Error('item 1 failed')
      return n
    })
    await expect(run).rejects.toThrow('item 1 failed')
    await new Promise((resolve) => setTimeout(resolve, 60))
    expect(started).toEqual([0, 1])
  })
})
