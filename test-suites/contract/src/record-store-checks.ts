import {
  compareUtf8,
  isAgentStateError,
  RECORD_OVERHEAD_BYTES,
  type RecordStore,
} from '@agent-state/core'
import { valueCapSkip } from './knobs.js'
import {
  bytes,
  expectKeys,
  expectRecord,
  oneWinner,
  sameBytes,
  text,
  walk,
  writeAll,
} from './record-store-assert.js'
import {
  type RecordStoreHarness,
  storeCall,
  storeEnsure,
  storeFail,
  writeRefused,
} from './record-store-harness.js'

/**
 * One check of the `RecordStore` primitive. `run` rejects with an
 * `AssertionError` whose message starts with the method at fault
 * (`RecordStore.scan: …`).
 */
export interface RecordStoreCheck {
  /** Stable id, `record-store/<slug>`. */
  readonly id: string
  readonly title: string
  /** Per-check timeout in ms. */
  readonly timeoutMs?: number
  /**
   * Why the check cannot run on a store with these capabilities (or, for an
   * optional method, on this store), or `undefined`.
   */
  skip?(capabilities: RecordStore['capabilities'], store: RecordStore): string | undefined
  run(harness: RecordStoreHarness): Promise<void>
}

function check(
  title: string,
  run: (harness: RecordStoreHarness) => Promise<void>,
  extra: Pick<RecordStoreCheck, 'skip' | 'timeoutMs'> = {},
): RecordStoreCheck {
  const slug = title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
  return { id: `record-store/${slug}`, title, run, ...extra }
}

const sorted = (keys: readonly string[]) => [...keys].sort(compareUtf8)

/** Keys whose UTF-8 byte order differs from UTF-16 code-unit order (astral after U+E000). */
const ORDER_KEYS = ['Z', 'a', 'a b', 'a/b', 'b', 'é', '\u{E000}', '😀', '中', '~']

/** Keys around the prefixes `pa/`, `pa` and `é`: a scan must keep to both bounds. */
const BOUND_KEYS = ['o/z', 'p', 'pa', 'pa/x', 'pa/y', 'pa/y/z', 'pa0', 'pb', 'é/1', 'é', 'ê']

/** The checks of the record-store tier, in order. */
export const RECORD_STORE_CHECKS: readonly RecordStoreCheck[] = [
  check('capabilities are declared', async (h) => {
    const { capabilities: caps, name } = await h.store()
    storeEnsure('capabilities', typeof name === 'string' && name.length > 0, 'name is empty')
    for (const flag of ['durable', 'multiProcess', 'multiHost'] as const) {
      storeEnsure('capabilities', typeof caps[flag] === 'boolean', `${flag} is not a boolean`)
    }
    storeEnsure(
      'capabilities',
      Number.isSafeInteger(caps.maxKeyBytes) && caps.maxKeyBytes >= 1024,
      `maxKeyBytes ${caps.maxKeyBytes} is below the contract's 1024`,
    )
    storeEnsure(
      'capabilities',
      Number.isSafeInteger(caps.maxValueBytes) && caps.maxValueBytes > 0,
      `maxValueBytes ${caps.maxValueBytes} is not a positive integer`,
    )
  }),

  check('read gives back what write stored, on every instance', async (h) => {
    const a = await h.store()
    const b = await h.store()
    const longKey = `${'k'.repeat(300)}/${'é'.repeat(361)}`
    for (const key of ['plain', 'with space/%2F#?', '😀/中', longKey]) {
      const missing = await storeCall('read', a.read(key), `read(${JSON.stringify(key)})`)
      storeEnsure('read', missing === null, `read of a key never written gave a record`)
      const buffer = bytes(`data of ${key}`)
      const version = await storeCall('write', a.write(key, buffer, { absent: true }), 'write')
      storeEnsure('write', typeof version === 'string' && version.length > 0, 'empty version')
      buffer.fill(0)
      await expectRecord(a, key, `data of ${key}`, version, 'same instance (caller buffer reused)')
      await expectRecord(b, key, `data of ${key}`, version, 'another instance')
    }
  }),

  check(
    'write honours absent and version conditions and stores nothing when refused',
    async (h) => {
      const store = await h.store()
      const v1 = await storeCall('write', store.write('k', bytes('one'), { absent: true }), 'write')
      await writeRefused(
        store.write('k', bytes('x'), { absent: true }),
        'absent on an existing record',
      )
      await expectRecord(store, 'k', 'one', v1, 'after a refused absent write')
      const v2 = await storeCall('write', store.write('k', bytes('one'), { version: v1 }), 'write')
      storeEnsure('write', v2 !== v1, `a rewrite of identical bytes kept version ${v1}`)
      await expectRecord(store, 'k', 'one', v2, 'after a write on the current version')
      await writeRefused(store.write('k', bytes('x'), { version: v1 }), 'a stale version')
      await expectRecord(store, 'k', 'one', v2, 'after a refused stale write')
      await writeRefused(
        store.write('missing', bytes('x'), { version: v2 }),
        'a version on a missing key',
      )
      const absent = await storeCall('read', store.read('missing'), 'read')
      storeEnsure('write', absent === null, 'a refused write on a missing key created the record')
    },
  ),

  check(
    'of concurrent conditional writes exactly one wins',
    async (h) => {
      const stores = await Promise.all(Array.from({ length: 8 }, () => h.store()))
      for (let round = 0; round < 5; round++) {
        const key = `race/${round}`
        const creates = await Promise.allSettled(
          stores.map((s, i) => s.write(key, bytes(`c${i}`), { absent: true })),
        )
        const version = await oneWinner(creates, `absent writes of ${key}`)
        const updates = await Promise.allSettled(
          stores.map((s, i) => s.write(key, bytes(`u${i}`), { version: version.value })),
        )
        const winner = await oneWinner(updates, `writes on version ${version.value} of ${key}`)
        await expectRecord(
          stores[0] as RecordStore,
          key,
          `u${winner.index}`,
          winner.value,
          'winner',
        )
      }
    },
    { timeoutMs: 60_000 },
  ),

  check('versions are never reused for a key, across instances', async (h) => {
    const instances = [await h.store(), await h.store()]
    for (const key of ['a', 'b']) {
      const seen = new Set<string>()
      let version = await storeCall(
        'write',
        instances[0]?.write(key, bytes('0'), { absent: true }) as Promise<string>,
        'write',
      )
      seen.add(version)
      for (let i = 1; i <= 40; i++) {
        const store = instances[i % 2] as RecordStore
        const current = await storeCall('read', store.read(key), 'read')
        storeEnsure(
          'read',
          current?.version === version,
          `read gave version ${current?.version}, the last write resolved ${version}`,
        )
        version = await storeCall(
          'write',
          store.write(key, bytes(String(i % 3)), { version }),
          'write',
        )
        storeEnsure(
          'write',
          !seen.has(version),
          `write ${i} of ${JSON.stringify(key)} resolved version ${version}, already used for that key`,
        )
        seen.add(version)
      }
    }
  }),

  check('scan lists in ascending UTF-8 byte order', async (h) => {
    const store = await h.store()
    await writeAll(store, [...ORDER_KEYS].reverse())
    const page = await storeCall('scan', store.scan({ prefix: '', limit: 100 }), 'scan')
    expectKeys(page.records, sorted(ORDER_KEYS), 'scan of every key (UTF-8 byte order, not UTF-16)')
    storeEnsure('scan', page.done, 'a scan that returned every record said done: false')
    for (const limit of [1, 3]) {
      expectKeys(await walk(store, '', limit), sorted(ORDER_KEYS), `a walk in pages of ${limit}`)
    }
  }),

  check('scan after is exclusive', async (h) => {
    const store = await h.store()
    await writeAll(store, ORDER_KEYS)
    const all = sorted(ORDER_KEYS)
    for (const [index, key] of all.entries()) {
      const page = await storeCall('scan', store.scan({ prefix: '', after: key, limit: 2 }), 'scan')
      expectKeys(
        page.records,
        all.slice(index + 1, index + 3),
        `scan after existing ${JSON.stringify(key)}`,
      )
    }
    const between = await storeCall(
      'scan',
      store.scan({ prefix: '', after: 'a a', limit: 1 }),
      'scan',
    )
    expectKeys(between.records, ['a b'], 'scan after a key that is not stored')
    const group = await storeCall(
      'scan',
      store.scan({ prefix: '', after: 'a\u{10FFFF}', limit: 1 }),
      'scan',
    )
    expectKeys(
      group.records,
      ['b'],
      'scan after "a" + U+10FFFF (skips every key starting with "a")',
    )
    const before = await storeCall(
      'scan',
      store.scan({ prefix: 'b', after: 'a', limit: 5 }),
      'scan',
    )
    expectKeys(before.records, ['b'], 'scan with an after that sorts before the prefix')
  }),

  check('scan after a stored key equal to the prefix is exclusive', async (h) => {
    const store = await h.store()
    // A walk of prefix "fo" in pages of 1 asks exactly this after its first page: a store that
    // reads an `after` equal to the prefix as "start at the prefix" returns "fo" again, forever.
    await writeAll(store, ['f', 'fo', 'fo/1', 'foo', 'fp'])
    for (const limit of [1, 5]) {
      const page = await storeCall(
        'scan',
        store.scan({ prefix: 'fo', after: 'fo', limit }),
        `scan({ prefix: "fo", after: "fo", limit: ${limit} })`,
      )
      expectKeys(
        page.records,
        ['fo/1', 'foo'].slice(0, limit),
        `scan({ prefix: "fo", after: "fo", limit: ${limit} }) with "fo" stored`,
      )
    }
    expectKeys(
      await walk(store, 'fo', 1),
      ['fo', 'fo/1', 'foo'],
      'a walk of prefix "fo" in pages of 1',
    )
  }),

  check('scan lists a rewritten or re-created key once', async (h) => {
    const store = await h.store()
    const keys = ['k/1', 'k/2', 'k/3']
    await writeAll(store, keys)
    // Rewrites (same bytes, so expectKeys still knows the data) must not index a key again.
    for (const key of keys) {
      for (let i = 0; i < 2; i++) {
        const current = await storeCall('read', store.read(key), 'read')
        storeEnsure('read', current !== null, `read(${JSON.stringify(key)}) gave null`)
        await storeCall(
          'write',
          store.write(key, bytes(`v:${key}`), { version: current.version }),
          `rewrite of ${JSON.stringify(key)}`,
        )
      }
    }
    if (store.remove !== undefined) {
      const current = await storeCall('read', store.read('k/2'), 'read')
      storeEnsure('read', current !== null, 'read("k/2") gave null')
      await storeCall('remove', store.remove('k/2', { version: current.version }), 'remove')
      await writeAll(store, ['k/2'])
    }
    const page = await storeCall('scan', store.scan({ prefix: 'k/', limit: 100 }), 'scan')
    expectKeys(page.records, keys, 'scan after rewrites (and a remove and re-create)')
    expectKeys(await walk(store, 'k/', 1), keys, 'a walk in pages of 1 after rewrites')
  }),

  check(
    'write keeps its own copy and read and scan give the caller its own also for Buffers',
    async (h) => {
      const store = await h.store()
      // Into the store: a small Buffer is a view into Node's shared pool, and a Buffer's
      // `slice()` is a view of the same memory, not a copy (unlike a plain Uint8Array's).
      const inputs: [string, Uint8Array][] = [
        ['in/buffer', Buffer.from('v:in/buffer')],
        ['in/subarray', Buffer.from('xx v:in/subarray xx').subarray(3, 16)],
        ['in/view', new Uint8Array(bytes('xx v:in/view xx').buffer, 3, 9)],
      ]
      for (const [key, data] of inputs) {
        storeEnsure('write', text(data) === `v:${key}`, `test setup: ${text(data)}`)
        const version = await storeCall('write', store.write(key, data, { absent: true }), 'write')
        data.fill(0x41)
        const found = await storeCall('read', store.read(key), 'read')
        storeEnsure(
          'write',
          found !== null && found.version === version && text(found.data) === `v:${key}`,
          `the caller overwrote the ${data.constructor.name} it wrote to ${JSON.stringify(key)} and the record changed to ${JSON.stringify(found === null ? null : text(found.data))}: write must keep a copy (a Buffer's slice() is a view)`,
        )
      }
      // Out of the store: the caller may mutate what read and scan give.
      const version = await storeCall(
        'write',
        store.write('out', Buffer.from('v:out'), { absent: true }),
        'write',
      )
      const read = await storeCall('read', store.read('out'), 'read')
      storeEnsure('read', read !== null, 'read("out") gave null')
      read.data.fill(0x42)
      const afterRead = await storeCall('read', store.read('out'), 'read')
      storeEnsure(
        'read',
        afterRead !== null && afterRead.version === version && text(afterRead.data) === 'v:out',
        `mutating the bytes read gave changed the record to ${JSON.stringify(afterRead === null ? null : text(afterRead.data))}: read must give the caller its own copy, not a view of the store's`,
      )
      const page = await storeCall('scan', store.scan({ prefix: 'out', limit: 1 }), 'scan')
      page.records[0]?.data.fill(0x43)
      const afterScan = await storeCall('read', store.read('out'), 'read')
      storeEnsure(
        'scan',
        afterScan !== null && text(afterScan.data) === 'v:out',
        `mutating the bytes scan gave changed the record to ${JSON.stringify(afterScan === null ? null : text(afterScan.data))}: scan must give the caller its own copy, not a view of the store's`,
      )
    },
  ),

  check('scan keeps to both bounds of the prefix', async (h) => {
    const store = await h.store()
    await writeAll(store, BOUND_KEYS)
    const cases: Record<string, string[]> = {
      'pa/': ['pa/x', 'pa/y', 'pa/y/z'],
      pa: ['pa', 'pa/x', 'pa/y', 'pa/y/z', 'pa0'],
      p: ['p', 'pa', 'pa/x', 'pa/y', 'pa/y/z', 'pa0', 'pb'],
      é: ['é', 'é/1'],
      'pa/y/': ['pa/y/z'],
      q: [],
      zzz: [],
    }
    for (const [prefix, expected] of Object.entries(cases)) {
      const page = await storeCall('scan', store.scan({ prefix, limit: 100 }), 'scan')
      expectKeys(page.records, expected, `scan of prefix ${JSON.stringify(prefix)}`)
      storeEnsure(
        'scan',
        page.done,
        `a scan of prefix ${JSON.stringify(prefix)} under its limit said done: false`,
      )
      expectKeys(
        await walk(store, prefix, 2),
        expected,
        `a walk of prefix ${JSON.stringify(prefix)} in pages of 2`,
      )
    }
  }),

  check('scan honours limit and done', async (h) => {
    const store = await h.store()
    const keys = ['n/1', 'n/2', 'n/3', 'n/4', 'n/5']
    await writeAll(store, [...keys, 'o'])
    const first = await storeCall('scan', store.scan({ prefix: 'n/', limit: 2 }), 'scan')
    expectKeys(first.records, ['n/1', 'n/2'], 'first page of 2')
    storeEnsure('scan', !first.done, 'a full page with more records after it said done: true')
    const last = await storeCall(
      'scan',
      store.scan({ prefix: 'n/', after: 'n/4', limit: 2 }),
      'scan',
    )
    expectKeys(last.records, ['n/5'], 'the last page')
    storeEnsure('scan', last.done, 'a page shorter than its limit said done: false')
    const empty = await storeCall(
      'scan',
      store.scan({ prefix: 'n/', after: 'n/5', limit: 2 }),
      'scan',
    )
    expectKeys(empty.records, [], 'a page after the last key')
    storeEnsure('scan', empty.done, 'an empty page said done: false')
  }),

  check('namespaces are kept apart', async (h) => {
    const mine = await h.store()
    const other = await h.otherNamespace()
    const theirs = await other.store()
    const v = await storeCall('write', mine.write('k', bytes('mine'), { absent: true }), 'write')
    await writeAll(mine, ['shared/x'])
    const seen = await storeCall('read', theirs.read('k'), 'read')
    storeEnsure(
      'read',
      seen === null,
      `another namespace (${other.namespace}) reads this one's record`,
    )
    const listed = await storeCall('scan', theirs.scan({ prefix: '', limit: 100 }), 'scan')
    expectKeys(listed.records, [], `a scan of another namespace (${other.namespace})`)
    const vt = await storeCall(
      'write',
      theirs.write('k', bytes('theirs'), { absent: true }),
      'write (absent, in another namespace)',
    )
    await expectRecord(mine, 'k', 'mine', v, 'this namespace after another wrote the same key')
    await expectRecord(theirs, 'k', 'theirs', vt, 'the other namespace')
    const page = await storeCall('scan', mine.scan({ prefix: '', limit: 100 }), 'scan')
    storeEnsure(
      'scan',
      page.records.length === 2,
      `a scan shows ${page.records.length} records, this namespace has 2`,
    )
    if (theirs.destroy !== undefined) {
      await storeCall('destroy', theirs.destroy(), 'destroy of the other namespace')
      await expectRecord(mine, 'k', 'mine', v, "this namespace after another's destroy")
    }
  }),

  check(
    'remove takes only the expected version and never lets a version return',
    async (h) => {
      const store = await h.store()
      const remove = store.remove?.bind(store) as NonNullable<RecordStore['remove']>
      const first = await storeCall(
        'write',
        store.write('r', bytes('1'), { absent: true }),
        'write',
      )
      const second = await storeCall(
        'write',
        store.write('r', bytes('2'), { version: first }),
        'write',
      )
      let refused: unknown
      await remove('r', { version: first }).then(
        () => storeFail('remove', 'a remove on a stale version removed the record'),
        (error: unknown) => {
          refused = error
        },
      )
      storeEnsure(
        'remove',
        isAgentStateError(refused, 'PRECONDITION_FAILED'),
        `a remove on a stale version must throw PRECONDITION_FAILED, got ${String(refused)}`,
      )
      await expectRecord(store, 'r', '2', second, 'after a refused remove')
      await storeCall('remove', remove('r', { version: second }), 'remove on the current version')
      const gone = await storeCall('read', store.read('r'), 'read')
      storeEnsure('remove', gone === null, 'read still finds the removed record')
      const seen = new Set([first, second])
      for (let round = 0; round < 20; round++) {
        const again = await storeCall(
          'write',
          store.write('r', bytes('x'), { absent: true }),
          'write',
        )
        storeEnsure('write', !seen.has(again), `a re-created record reused version ${again}`)
        seen.add(again)
        await storeCall('remove', remove('r', { version: again }), 'remove')
      }
    },
    {
      skip: (_capabilities, store) =>
        store.remove === undefined ? 'the store has no optional remove' : undefined,
    },
  ),
  check(
    'a record of maxValueBytes plus the record overhead is accepted whole',
    async (h) => {
      const store = await h.store()
      const size = store.capabilities.maxValueBytes + RECORD_OVERHEAD_BYTES
      const data = new Uint8Array(size)
      for (let i = 0; i < size; i += 4093) data[i] = (i / 4093) % 251
      data[size - 1] = 7
      const version = await storeCall(
        'write',
        store.write('big', data, { absent: true }),
        `write of ${size} bytes (maxValueBytes + RECORD_OVERHEAD_BYTES)`,
      )
      const found = await storeCall('read', store.read('big'), 'read')
      storeEnsure(
        'read',
        found !== null && found.version === version,
        'the large record or its version is missing',
      )
      storeEnsure(
        'read',
        sameBytes(found.data, data),
        `read gave ${found.data.byteLength} bytes, not the ${size} written`,
      )
      const page = await storeCall('scan', store.scan({ prefix: 'big', limit: 1 }), 'scan')
      storeEnsure(
        'scan',
        page.records[0] !== undefined && sameBytes(page.records[0].data, data),
        'scan did not give the large record whole',
      )
    },
    // The declared limit itself, whatever it is: a claim is proved or the check fails (or is
    // skipped as not testable above AGENT_STATE_CONTRACT_MAX_VALUE_BYTES, unproved).
    { timeoutMs: 120_000, skip: (caps) => valueCapSkip(caps.maxValueBytes) },
  ),
]
