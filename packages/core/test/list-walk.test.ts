import { describe, expect, it } from 'vitest'
import type { Backend, ListOptions, ListPage } from '../src/backend.js'
import { walkList } from '../src/list-walk.js'

/** A listing of scripted pages: each call answers the page its cursor names, and records what it was asked. */
function scriptedList(
  pages: readonly ListPage[],
): Pick<Backend, 'list'> & { asked: ListOptions[] } {
  const asked: ListOptions[] = []
  return {
    asked,
    async list(options = {}) {
      asked.push(options)
      const at = options.cursor === undefined ? 0 : Number(options.cursor)
      const page = pages[at]
      if (page === undefined) throw new Error(`no page ${at}`)
      return page
    },
  }
}

const entry = (key: string) => ({ key, version: 'v1' })

// An empty page that still carries a cursor is allowed by the contract (docs/contract.md, Listing).
const PAGES: readonly ListPage[] = [
  { entries: [entry('a/1'), entry('a/2')], cursor: '1' },
  { entries: [], cursor: '2' },
  { entries: [entry('a/3')] },
]

async function keysOf(
  walk: typeof walkList,
  list: Pick<Backend, 'list'>,
  options: Omit<ListOptions, 'cursor'>,
): Promise<string[]> {
  const keys: string[] = []
  for await (const page of walk(list, options)) keys.push(...page.entries.map((e) => e.key))
  return keys
}

describe('walkList', () => {
  it('follows every cursor, past an empty page, with the caller options on each call', async () => {
    const list = scriptedList(PAGES)
    expect(await keysOf(walkList, list, { prefix: 'a/', limit: 2 })).toEqual(['a/1', 'a/2', 'a/3'])
    expect(list.asked).toEqual([
      { prefix: 'a/', limit: 2 },
      { prefix: 'a/', limit: 2, cursor: '1' },
      { prefix: 'a/', limit: 2, cursor: '2' },
    ])
  })

  it('catches a walk that stops at the first empty page (mutant)', async () => {
    const stopsAtEmpty: typeof walkList = async function* (backend, options = {}) {
      for await (const page of walkList(backend, options)) {
        if (page.entries.length === 0) return
        yield page
      }
    }
    expect(await keysOf(stopsAtEmpty, scriptedList(PAGES), { prefix: 'a/' })).not.toEqual([
      'a/1',
      'a/2',
      'a/3',
    ])
  })
})
