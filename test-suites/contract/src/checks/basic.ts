import { bytes, ensure, ensureBytes, ensureEqual, ensureSame, rejectsWith } from '../assert.js'
import { type ContractCheck, check } from '../check.js'

const MIB = 1024 * 1024

/** Basic values and conflict metadata. */
export const basicChecks: ContractCheck[] = [
  check('basic', 'declares contract version 1 a name and well-formed capabilities', async (h) => {
    const b = await h.backend()
    ensureEqual(b.contractVersion, 1, 'contractVersion')
    ensure(typeof b.name === 'string' && b.name.length > 0, 'name is a non-empty string')
    const c = b.capabilities
    for (const flag of ['durable', 'multiProcess', 'multiHost'] as const) {
      ensure(typeof c[flag] === 'boolean', `capabilities.${flag} is a boolean`)
    }
    ensure(
      ['server', 'host', 'observer'].includes(c.leaseClock),
      `leaseClock ${String(c.leaseClock)}`,
    )
    ensure(
      Number.isSafeInteger(c.maxKeyBytes) && c.maxKeyBytes >= 1024,
      'maxKeyBytes is at least 1024',
    )
    ensure(
      Number.isSafeInteger(c.maxValueBytes) && c.maxValueBytes >= 1,
      'maxValueBytes is positive',
    )
    ensure(!c.multiHost || c.multiProcess, 'multiHost implies multiProcess')
    // A capability not claimed is absent, not present as undefined: `'changeNotification' in
    // capabilities` and a spread over defaults must read the same claim as `!== undefined`.
    for (const [name, value] of Object.entries(c)) {
      ensure(
        value !== undefined,
        `capabilities.${name} is present but undefined (absent means not claimed)`,
      )
    }
    // The other direction (claimed, no watch) fails the change-notification tier.
    ensure(
      c.changeNotification !== undefined || b.watch === undefined,
      'watch exists only when changeNotification is claimed',
    )
  }),

  check('basic', 'stores all 256 byte values and the empty value', async (h) => {
    const b = await h.backend()
    const all = Uint8Array.from({ length: 256 }, (_, i) => i)
    const meta = await b.put('bytes/all', all)
    ensureEqual(meta.size, 256, 'size of the 256-byte value')
    ensureEqual(meta.key, 'bytes/all', 'meta.key')
    ensureBytes((await b.get('bytes/all'))?.value, all, 'get of all byte values')
    await b.put('bytes/empty', new Uint8Array(0))
    const empty = await b.get('bytes/empty')
    ensure(empty !== null, 'an empty value must be stored, not treated as absent')
    ensureEqual(empty.value.byteLength, 0, 'empty value length')
    ensureEqual(empty.meta.size, 0, 'empty value size')
    ensureEqual((await b.head('bytes/empty'))?.size, 0, 'head of the empty value')
  }),

  check('basic', 'stores a value of several MiB', async (h) => {
    const b = await h.backend()
    const size = Math.min(3 * MIB + 7, h.capabilities.maxValueBytes)
    const big = new Uint8Array(size)
    for (let i = 0; i < size; i++) big[i] = (i * 2654435761) >>> 24
    const meta = await b.put('big', big)
    ensureEqual(meta.size, size, 'size of the large value')
    ensureBytes((await b.get('big'))?.value, big, 'large value round trip')
  }),

  check('basic', 'get head put delete semantics', async (h) => {
    const b = await h.backend()
    ensureEqual(await b.get('a'), null, 'get of a missing key')
    ensureEqual(await b.head('a'), null, 'head of a missing key')
    const m1 = await b.put('a', bytes('one'))
    const got = await b.get('a')
    ensureBytes(got?.value, bytes('one'), 'value after put')
    ensureSame(got?.meta, m1, 'get meta equals put meta')
    ensureSame(await b.head('a'), m1, 'head meta equals put meta')
    const m2 = await b.put('a', bytes('two!'))
    ensure(m2.version !== m1.version, 'a replacing write changes the version')
    ensureEqual(m2.size, 4, 'size after replace')
    ensureBytes((await b.get('a'))?.value, bytes('two!'), 'value after replace')
    ensureEqual(await b.delete('a'), true, 'delete of an existing key returns true')
    ensureEqual(await b.get('a'), null, 'get after delete')
    ensureEqual(await b.head('a'), null, 'head after delete')
    ensureEqual(await b.delete('a'), false, 'second delete returns false')
    ensureEqual(await b.delete('never'), false, 'delete of a never-written key returns false')
    const other = await h.backend()
    await b.put('shared', bytes('x'))
    ensureBytes((await other.get('shared'))?.value, bytes('x'), 'another instance sees the write')
  }),

  check('basic', 'get returns a copy unaffected by later buffer writes', async (h) => {
    const b = await h.backend()
    // A plain Uint8Array (whose `slice` copies) and a pooled Buffer (whose `slice` is a view of
    // the caller's memory): a backend must copy either.
    for (const [key, buffer, what] of [
      ['copy', bytes('original'), 'a Uint8Array'],
      ['copy/buffer', Buffer.from('original'), 'a Buffer'],
    ] as const) {
      await b.put(key, buffer)
      buffer.fill(0x41)
      ensureBytes(
        (await b.get(key))?.value,
        bytes('original'),
        `caller mutation of ${what} after put`,
      )
      const first = await b.get(key)
      first?.value.fill(0x42)
      ensureBytes(
        (await b.get(key))?.value,
        bytes('original'),
        `mutating a returned value (${what})`,
      )
    }
  }),

  check('metadata', 'writer identity and updatedAt are returned by head and get', async (h) => {
    const b = await h.backend()
    const writer = {
      writerId: 'w-1',
      stageId: 'stage-2',
      sessionId: 'sess-3',
      workerId: 'worker-4',
    }
    h.clock.advance(1234)
    const at = h.clock.now()
    const meta = await b.put('meta/a', bytes('v'), { writer })
    ensureSame(meta.writer, writer, 'writer in put meta')
    ensureSame((await b.head('meta/a'))?.writer, writer, 'writer from head')
    ensureSame((await b.get('meta/a'))?.meta.writer, writer, 'writer from get')
    const updatedAt = (await b.head('meta/a'))?.updatedAt
    ensure(typeof updatedAt === 'number' && Number.isFinite(updatedAt), 'updatedAt is a number')
    if (h.capabilities.leaseClock === 'host') {
      ensureEqual(updatedAt, at, 'updatedAt on the injected host clock')
    } else {
      ensure(Math.abs(updatedAt - Date.now()) < 5 * 60_000, 'updatedAt is near the real time')
    }
    const partial = { writerId: 'only-id' }
    await b.put('meta/b', bytes('v'), { writer: partial })
    ensureSame((await b.get('meta/b'))?.meta.writer, partial, 'writer with only writerId')
    await b.put('meta/a', bytes('w'))
    ensureEqual((await b.head('meta/a'))?.writer, null, 'a write without writer gives writer null')
  }),

  check('errors', 'CLOSED after close', async (h) => {
    const b = await h.backend()
    await b.put('c', bytes('v'))
    await b.close()
    await b.close()
    await rejectsWith(b.get('c'), 'CLOSED', 'get after close')
    await rejectsWith(b.head('c'), 'CLOSED', 'head after close')
    await rejectsWith(b.put('c', bytes('w')), 'CLOSED', 'put after close')
    await rejectsWith(b.delete('c'), 'CLOSED', 'delete after close')
    await rejectsWith(b.list(), 'CLOSED', 'list after close')
    await rejectsWith(
      b.acquireLease('c', { holder: 'h', ttlMs: 1000 }),
      'CLOSED',
      'acquireLease after close',
    )
    await rejectsWith(b.getLease('c'), 'CLOSED', 'getLease after close')
  }),
]
