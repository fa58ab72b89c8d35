import { describe, expect, it } from 'vitest'
import {
  type ChangeHint,
  createHintStream,
  createPollingWatcher,
  createWatchSet,
  failedWatch,
  keyMatchesPrefix,
} from '../src/index.js'

async function take(iterable: AsyncIterable<ChangeHint>, n: number): Promise<ChangeHint[]> {
  const out: ChangeHint[] = []
  const it = iterable[Symbol.asyncIterator]()
  while (out.length < n) {
    const next = await it.next()
    if (next.done === true) break
    out.push(next.value)
  }
  return out
}

describe('hint streams', () => {
  it('match prefixes by key bytes: a/ covers a/x, never ab, a, b/x', () => {
    expect(keyMatchesPrefix('a/x', 'a/')).toBe(true)
    expect(keyMatchesPrefix('a/b/c', 'a/')).toBe(true)
    for (const key of ['ab', 'a', 'b/x', 'b/a/x', 'A/x'])
      expect(keyMatchesPrefix(key, 'a/')).toBe(false)
    const s = createHintStream('a/')
    for (const key of ['ab', 'a', 'b/x']) s.key(key)
    s.prefixChanged('b/')
    s.key('a/x')
    s.prefixChanged('')
    s.prefixChanged('a/deep/')
    return expect(take(s, 3)).resolves.toEqual([
      { kind: 'key', key: 'a/x' },
      { kind: 'prefix', prefix: 'a/' },
      { kind: 'prefix', prefix: 'a/deep/' },
    ])
  })

  it('coalesce pending hints of one key, and a pending resync swallows the rest', async () => {
    const s = createHintStream('')
    s.key('k')
    s.key('k')
    s.key('j')
    expect(await take(s, 2)).toEqual([
      { kind: 'key', key: 'k' },
      { kind: 'key', key: 'j' },
    ])
    s.key('x')
    s.resync()
    s.key('y')
    const it = s[Symbol.asyncIterator]()
    expect(await it.next()).toEqual({ done: false, value: { kind: 'resync' } })
    s.end()
    expect(await it.next()).toEqual({ done: true, value: undefined })
  })

  it('replace more pending hints than the bound with one resync', async () => {
    const s = createHintStream('', { maxPending: 3 })
    for (const key of ['a', 'b', 'c', 'd']) s.key(key)
    expect(await take(s, 1)).toEqual([{ kind: 'resync' }])
  })

  it('end a waiting next() on abort, on return() and on end(), calling onEnd once', async () => {
    for (const how of ['abort', 'return', 'end'] as const) {
      const controller = new AbortController()
      let ended = 0
      const s = createHintStream('', { signal: controller.signal, onEnd: () => ended++ })
      const it = s[Symbol.asyncIterator]()
      const waiting = it.next()
      if (how === 'abort') controller.abort()
      else if (how === 'return') await it.return?.()
      else s.end()
      expect(await waiting).toEqual({ done: true, value: undefined })
      s.end()
      expect(ended, how).toBe(1)
    }
    const aborted = new AbortController()
    aborted.abort()
    const set = createWatchSet()
    expect(set.open('', { signal: aborted.signal }).ended).toBe(true)
    expect(set.size).toBe(0)
  })

  it('reject the first next() of a failed watch with its error', async () => {
    const error = new Error('bad prefix')
    await expect(failedWatch(error)[Symbol.asyncIterator]().next()).rejects.toBe(error)
  })
})

describe('the polling watcher', () => {
  it('starts with resync after its first listing, then hints exactly the keys whose version changed', async () => {
    const versions = new Map<string, string>([['p/a', '1']])
    let probes = 0
    let changed = false
    const poller = createPollingWatcher({
      intervalMs: 5,
      probe() {
        probes++
        const was = changed
        changed = false
        return was
      },
      async list({ prefix = '' }) {
        return {
          entries: [...versions]
            .filter(([key]) => key.startsWith(prefix))
            .map(([key, version]) => ({ key, version })),
        }
      },
    })
    const controller = new AbortController()
    const it = poller.watch('p/', { signal: controller.signal }, () => {})[Symbol.asyncIterator]()
    expect(await it.next()).toEqual({ done: false, value: { kind: 'resync' } })
    versions.set('p/a', '2')
    versions.set('p/b', '1')
    versions.set('q/x', '1')
    changed = true
    const got = [await it.next(), await it.next()].map((r) => r.value)
    expect(got).toEqual([
      { kind: 'key', key: 'p/a' },
      { kind: 'key', key: 'p/b' },
    ])
    versions.delete('p/a')
    poller.changed()
    expect((await it.next()).value).toEqual({ kind: 'key', key: 'p/a' })
    expect(probes).toBeGreaterThan(0)
    controller.abort()
    expect(await it.next()).toEqual({ done: true, value: undefined })
    expect(poller.size).toBe(0)
  })
})
