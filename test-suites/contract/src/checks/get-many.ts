import {
  type Backend,
  getMany,
  MAX_GET_MANY_KEYS,
  mapLimited,
  type StoredValue,
} from '@agent-state/core'
import {
  bytes,
  ensure,
  ensureBytes,
  ensureEqual,
  ensureSame,
  rejectsWith,
  text,
} from '../assert.js'
import { type ContractCheck, check } from '../check.js'
import type { Harness } from '../harness.js'
import { ACCEPTED_KEYS, rejectedKeys } from './keys.js'

/**
 * The instance's own `getMany`, bound, or, on an instance without one, core's `getMany` over its
 * `get`: what a caller of core's helper gets on that backend. The tier thus runs on every backend
 * (nothing is skipped); on one with a native `getMany` it calls that method directly, so the
 * method's own argument checks are proved, not core's in front of it.
 */
function getManyOf(b: Backend): (keys: readonly string[]) => Promise<(StoredValue | null)[]> {
  if (typeof b.getMany === 'function') return b.getMany.bind(b)
  return (keys) => getMany(b, keys)
}

/** Calls `getMany` and checks the answer's shape: an array with one entry per key. */
async function readMany(b: Backend, keys: readonly string[]): Promise<(StoredValue | null)[]> {
  const got = await getManyOf(b)(keys)
  ensure(Array.isArray(got), 'getMany resolves an array')
  ensureEqual(got.length, keys.length, 'getMany answers one entry per key')
  return got
}

/** Fails unless `entry` is what `get` of `key` answers now (no write runs meanwhile). */
async function ensureAsGet(b: Backend, key: string, entry: StoredValue | null | undefined) {
  const shown = JSON.stringify(key.slice(0, 40))
  const expected = await b.get(key)
  if (expected === null) {
    ensureEqual(entry, null, `getMany entry of ${shown} (get answers null)`)
    return
  }
  ensure(entry !== null && entry !== undefined, `getMany entry of ${shown}: a value, got null`)
  ensureBytes(entry.value, expected.value, `getMany value of ${shown}`)
  ensureSame(entry.meta, expected.meta, `getMany meta of ${shown}`)
}

/** A deterministic shuffle from the run's seed (a small LCG: the order only has to vary). */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items]
  let state = seed >>> 0 || 1
  for (let i = out.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    const j = state % (i + 1)
    ;[out[i], out[j]] = [out[j] as T, out[i] as T]
  }
  return out
}

/** Writes `key` and deletes it again under a lease: the key keeps its lease and fence, no value. */
async function deletedUnderLease(h: Harness, b: Backend, key: string): Promise<void> {
  const lease = await b.acquireLease(key, { holder: 'reader', ttlMs: h.leaseTtlMs })
  await b.put(key, bytes('soon gone'), { lease })
  ensureEqual(await b.delete(key, { lease }), true, `fenced delete of ${key}`)
}

/** The optional multi-key read (docs/contract.md, Multi-key reads). */
export const getManyChecks: ContractCheck[] = [
  check(
    'get-many',
    'getMany answers in the order of the keys with null for missing and deleted keys and CLOSED after close',
    async (h) => {
      const b = await h.backend()
      await b.put('a', bytes('A'))
      await b.put('b', bytes('B'))
      await b.put('gone', bytes('G'))
      await b.delete('gone')
      await deletedUnderLease(h, b, 'leased/gone')
      await b.acquireLease('leased/never', { holder: 'reader', ttlMs: h.leaseTtlMs })
      ensureSame(await readMany(b, []), [], 'getMany of no keys')
      const keys = ['b', 'missing', 'gone', 'a', 'leased/gone', 'leased/never', 'b', 'a']
      const got = await readMany(b, keys)
      ensureSame(
        got.map((entry) => (entry === null ? null : text(entry.value))),
        ['B', null, null, 'A', null, null, 'B', 'A'],
        `getMany(${JSON.stringify(keys)})`,
      )
      for (const [i, key] of keys.entries()) await ensureAsGet(b, key, got[i])
      // Duplicates are independent copies, as two gets are: mutating one leaves the others.
      got[0]?.value.fill(0x5a)
      ensureBytes(got[6]?.value, bytes('B'), 'the duplicate entry after mutating the first')
      ensureBytes((await b.get('b'))?.value, bytes('B'), 'get after mutating a getMany entry')
      await b.close()
      await rejectsWith(getManyOf(b)(['a', 'missing']), 'CLOSED', 'getMany after close')
    },
  ),

  check(
    'get-many',
    'getMany agrees with get for many keys including odd and astral keys',
    async (h) => {
      const b = await h.backend()
      const odd = [...ACCEPTED_KEYS, 'é', 'e\u0301', 'Å', 'A\u030a', '𝔘', '\uFFFD', '\uE000']
      const stored = odd.filter((k) => bytes(k).byteLength <= h.capabilities.maxKeyBytes)
      for (let i = 0; i < 200; i++) stored.push(`many/${i}/x${'x'.repeat(i % 7)}`)
      // Written and compared 16 at a time: the check is about the answers, not the order of writes.
      await mapLimited([...stored.entries()], 16, ([i, key]) =>
        b.put(key, bytes(`value ${i} of ${key}`), { writer: { writerId: `w${i % 3}` } }),
      )
      const deleted = stored.filter((_, i) => i % 11 === 5)
      await mapLimited(deleted, 16, (key) => b.delete(key))
      const missing = Array.from({ length: 50 }, (_, i) => `many/${i}/missing`)
      const keys = shuffled([...stored, ...missing, ...stored.slice(0, 20)], h.seed)
      const got = await readMany(b, keys)
      await mapLimited([...keys.entries()], 16, ([i, key]) => ensureAsGet(b, key, got[i]))
      h.report({ keys: keys.length })
    },
    { timeoutMs: 60_000 },
  ),

  check(
    'get-many',
    `getMany takes at most ${MAX_GET_MANY_KEYS} keys and refuses more with INVALID_ARGUMENT`,
    async (h) => {
      const b = await h.backend()
      await b.put('bound/7', bytes('seven'))
      const keys = Array.from({ length: MAX_GET_MANY_KEYS }, (_, i) => `bound/${i}`)
      const got = await readMany(b, keys)
      ensureBytes(got[7]?.value, bytes('seven'), 'the stored key among the most keys allowed')
      ensure(
        got.every((entry, i) => i === 7 || entry === null),
        'every other key of the full call is null',
      )
      await rejectsWith(
        getManyOf(b)([...keys, 'bound/one-more']),
        'INVALID_ARGUMENT',
        `getMany of ${MAX_GET_MANY_KEYS + 1} keys`,
      )
      await rejectsWith(
        getManyOf(b)(Array.from({ length: MAX_GET_MANY_KEYS + 1 }, () => 'bound/7')),
        'INVALID_ARGUMENT',
        `getMany of one key repeated ${MAX_GET_MANY_KEYS + 1} times`,
      )
    },
  ),

  check(
    'get-many',
    'getMany refuses an invalid key anywhere in the list with INVALID_KEY naming its position',
    async (h) => {
      const b = await h.backend()
      await b.put('a', bytes('A'))
      for (const [label, bad] of rejectedKeys(h.capabilities.maxKeyBytes)) {
        for (const index of [0, 1, 2]) {
          const keys = ['a', 'b']
          keys.splice(index, 0, bad)
          const error = await rejectsWith(
            getManyOf(b)(keys),
            'INVALID_KEY',
            `getMany with a ${label} key at position ${index}`,
          )
          ensureEqual(error.context.index, index, `context.index of the ${label} key`)
        }
      }
      const nonString = [7] as unknown as string[]
      await rejectsWith(getManyOf(b)(nonString), 'INVALID_KEY', 'getMany with a number as key')
    },
  ),
]
