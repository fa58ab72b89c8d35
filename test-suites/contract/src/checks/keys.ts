import { RESERVED_SEGMENT_PREFIX } from '@agent-state/core'
import {
  bytes,
  ensure,
  ensureBytes,
  ensureEqual,
  ensureSame,
  fail,
  rejectsWith,
} from '../assert.js'
import { type ContractCheck, check } from '../check.js'
import { byteCompare, listAll } from './list-all.js'

/** Keys every backend must reject with `INVALID_KEY`, with a label for messages. */
export function rejectedKeys(maxKeyBytes: number): Array<[string, string]> {
  const controls: Array<[string, string]> = []
  for (let c = 0; c <= 0x1f; c++)
    controls.push([`U+${c.toString(16).padStart(4, '0')}`, `a${String.fromCharCode(c)}b`])
  controls.push(['U+007F', 'a\u007fb'])
  return [
    ['empty', ''],
    ['leading slash', '/a'],
    ['trailing slash', 'a/'],
    ['double slash', 'a//b'],
    ['dot', '.'],
    ['dot-dot', '..'],
    ['dot segment', 'a/./b'],
    ['dot-dot segment', 'a/../b'],
    ['leading dot-dot', '../a'],
    ['trailing dot-dot', 'a/..'],
    ['trailing dot', 'a/.'],
    ['leading dot', './a'],
    ...controls,
    ['backslash', 'a\\b'],
    ['lone high surrogate', 'a\ud800b'],
    ['lone low surrogate', 'a\udc00'],
    ['reserved segment', `${RESERVED_SEGMENT_PREFIX}x`],
    ['reserved inner segment', `a/${RESERVED_SEGMENT_PREFIX}lease/b`],
    ['too long', 'k'.repeat(Math.max(maxKeyBytes, 1024) + 1)],
    ['too long multibyte', '€'.repeat(Math.floor(Math.max(maxKeyBytes, 1024) / 3) + 1)],
  ]
}

/** Odd keys that must round-trip exactly. */
export const ACCEPTED_KEYS: readonly string[] = [
  'with space',
  ' leading and trailing space ',
  'per%cent',
  '%2F',
  'a%2Fb',
  'hash#tag',
  'question?mark',
  'emoji/😀🎉',
  '漢字/キー',
  'ｆｕｌｌｗｉｄｔｈ',
  '𝔘nicode',
  '\uE000private',
  'مفتاح',
  'Case',
  'case',
  'CASE',
  'a.',
  '.hidden',
  '...',
  'a/.b/c..',
  'tilde~.as',
  `x/${'s'.repeat(300)}`,
  'é/e\u0301',
  'z'.repeat(1024),
]

/** Key rules. */
export const keyChecks: ContractCheck[] = [
  check('keys', 'rejects invalid keys with INVALID_KEY and writes nothing', async (h) => {
    const b = await h.backend()
    const lease = await b.acquireLease('valid', { holder: 'h', ttlMs: h.leaseTtlMs })
    for (const [label, key] of rejectedKeys(h.capabilities.maxKeyBytes)) {
      await rejectsWith(b.put(key, bytes('v')), 'INVALID_KEY', `put of ${label} key`)
      await rejectsWith(b.get(key), 'INVALID_KEY', `get of ${label} key`)
      await rejectsWith(b.head(key), 'INVALID_KEY', `head of ${label} key`)
      await rejectsWith(b.delete(key), 'INVALID_KEY', `delete of ${label} key`)
      await rejectsWith(
        b.acquireLease(key, { holder: 'h', ttlMs: 1000 }),
        'INVALID_KEY',
        `acquireLease of ${label} key`,
      )
      await rejectsWith(b.getLease(key), 'INVALID_KEY', `getLease of ${label} key`)
    }
    await b.releaseLease(lease)
    const listed = await listAll(b, {})
    ensureSame(listed, [], 'nothing is listed after rejected writes')
  }),

  check('keys', 'odd keys round-trip exactly through put get and list', async (h) => {
    const b = await h.backend()
    const keys = ACCEPTED_KEYS.filter((k) => bytes(k).byteLength <= h.capabilities.maxKeyBytes)
    for (const [i, key] of keys.entries()) {
      const meta = await b.put(key, bytes(`value ${i}`))
      ensureEqual(meta.key, key, `meta.key of ${JSON.stringify(key.slice(0, 40))}`)
    }
    for (const [i, key] of keys.entries()) {
      const got = await b.get(key)
      ensureBytes(got?.value, bytes(`value ${i}`), `value of ${JSON.stringify(key.slice(0, 40))}`)
      ensureEqual(got?.meta.key, key, 'get meta.key')
    }
    const listed = await listAll(b, {})
    ensureSame(listed, [...keys].sort(byteCompare), 'listing of odd keys in byte order')
    for (const key of keys) {
      const exact = await b.list({ prefix: key })
      ensure(
        exact.entries.some((e) => e.key === key),
        `prefix listing finds ${JSON.stringify(key.slice(0, 40))}`,
      )
    }
  }),

  check('keys', 'lists astral characters after U+E000-U+FFFF in UTF-8 byte order', async (h) => {
    const b = await h.backend()
    const keys = [
      'o/\u{1F600}',
      'o/\uE000',
      'o/\uFFFD',
      'o/\u{10000}',
      'o/z',
      'o/\u00e9',
      'o/\uFF21',
    ]
    for (const key of keys) await b.put(key, bytes(key))
    const expected = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
    const listed = await listAll(b, { prefix: 'o/' })
    if (listed.join('\n') !== expected.join('\n')) {
      fail(`UTF-8 byte order expected ${JSON.stringify(expected)}, got ${JSON.stringify(listed)}`)
    }
    const paged = await listAll(b, { prefix: 'o/', limit: 2 })
    ensureSame(paged, expected, 'byte order across pages of 2')
  }),
]
