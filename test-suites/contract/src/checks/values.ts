import { isAgentStateError } from '@agent-state/core'
import { bytes, ensure, ensureBytes, ensureEqual, ensureSame, fail } from '../assert.js'
import { type ContractCheck, check } from '../check.js'
import { listAll } from './list-all.js'

const KIB = 1024
const MIB = 1024 * KIB

/** Deterministic, position-dependent bytes: a shifted or truncated copy never matches. */
function pattern(size: number, salt: number): Uint8Array {
  const out = new Uint8Array(size)
  let x = (salt * 2654435761 + 1) >>> 0
  for (let i = 0; i < size; i++) {
    x = (x * 1103515245 + 12345) >>> 0
    out[i] = x >>> 24
  }
  return out
}

/** Sizes at the edges a backend's framing, paging or chunking may get wrong. */
export function edgeSizes(maxValueBytes: number): number[] {
  const sizes = [0, 1, 2, 255, 256, 257, 4 * KIB - 1, 4 * KIB, 4 * KIB + 1]
  sizes.push(64 * KIB - 1, 64 * KIB, 64 * KIB + 1, MIB - 1, MIB, MIB + 1)
  // The limit itself where writing it twice more is cheap (the VALUE_TOO_LARGE check writes
  // and reads back a value of exactly the limit at any size).
  if (maxValueBytes <= 16 * MIB) sizes.push(maxValueBytes - 1, maxValueBytes)
  return [...new Set(sizes.filter((s) => s >= 0 && s <= maxValueBytes))].sort((a, b) => a - b)
}

/** Value shapes and sizes a caller can legitimately pass, and the metadata of conditional writes. */
export const valueChecks: ContractCheck[] = [
  check('basic', 'stores exactly the bytes of views Buffers and edge sizes', async (h) => {
    const b = await h.backend()
    const other = await h.backend()
    const backing = pattern(300, 1)
    // A view with a non-zero offset into a larger buffer: only its 100 bytes are the value.
    const view = backing.subarray(37, 137)
    ensure(view.byteOffset === 37 && view.buffer.byteLength === 300, 'test setup: a real view')
    const m = await b.put('shape/view', view)
    ensureEqual(m.size, 100, 'size of a subarray view')
    ensureBytes((await other.get('shape/view'))?.value, backing.slice(37, 137), 'a subarray view')
    ensureEqual((await other.head('shape/view'))?.size, 100, 'head size of a subarray view')
    // Node Buffers of small strings share a pooled ArrayBuffer at an offset.
    const buffer = Buffer.from('a pooled Buffer value')
    await b.put('shape/buffer', buffer)
    const got = await other.get('shape/buffer')
    ensure(got !== null && got.value instanceof Uint8Array, 'get returns a Uint8Array')
    ensureBytes(got.value, bytes('a pooled Buffer value'), 'a Buffer value')
    // A view of zero bytes is the empty value, not an absent one.
    await b.put('shape/empty-view', backing.subarray(5, 5))
    const empty = await other.get('shape/empty-view')
    ensure(empty !== null, 'an empty view is stored as an empty value')
    ensureEqual(empty.value.byteLength, 0, 'empty view length')
    const sizes = edgeSizes(h.capabilities.maxValueBytes)
    h.report({ largestValueBytes: sizes[sizes.length - 1] ?? 0, valueSizes: sizes.length })
    for (const [i, size] of sizes.entries()) {
      const data = pattern(size + 11, size)
      const value = data.subarray(11) // a view, so offsets matter at every size
      const meta = await b.put(`size/${i}`, value)
      ensureEqual(meta.size, size, `put size of ${size} bytes`)
      const read = await other.get(`size/${i}`)
      ensureBytes(read?.value, data.slice(11), `a value of ${size} bytes`)
      ensureEqual(read?.meta.size, size, `get size of ${size} bytes`)
      ensureEqual((await other.head(`size/${i}`))?.size, size, `head size of ${size} bytes`)
      // Free the space again: large values add up on small servers.
      if (size > 64 * KIB) await b.delete(`size/${i}`)
    }
  }),

  check(
    'metadata',
    'meta returned by conditional and fenced writes equals head get and list',
    async (h) => {
      const b = await h.backend()
      const other = await h.backend()
      const agree = async (key: string, meta: unknown, what: string) => {
        ensureSame(await other.head(key), meta, `${what}: head equals the returned meta`)
        ensureSame((await other.get(key))?.meta, meta, `${what}: get meta equals the returned meta`)
      }
      const host = h.capabilities.leaseClock === 'host'
      h.clock.advance(1000)
      const w1 = { writerId: 'creator', sessionId: 's-1' }
      const created = await b.put('cm', bytes('abc'), { ifNoneMatch: '*', writer: w1 })
      ensureSame(created.writer, w1, 'writer of create-if-absent')
      ensureEqual(created.size, 3, 'size of create-if-absent')
      if (host) ensureEqual(created.updatedAt, h.clock.now(), 'updatedAt of create-if-absent')
      await agree('cm', created, 'create-if-absent')
      h.clock.advance(1000)
      const w2 = { writerId: 'cas', stageId: 'st', workerId: 'wk' }
      const cas = await b.put('cm', bytes('abcdefg'), { ifMatch: created.version, writer: w2 })
      ensureSame(cas.writer, w2, 'writer of compare-and-set')
      ensureEqual(cas.size, 7, 'size of compare-and-set')
      if (host) ensureEqual(cas.updatedAt, h.clock.now(), 'updatedAt of compare-and-set')
      await agree('cm', cas, 'compare-and-set')
      h.clock.advance(1000)
      const bare = await b.put('cm', new Uint8Array(0), { ifMatch: cas.version })
      ensureEqual(bare.writer, null, 'a conditional write without writer gives writer null')
      ensureEqual(bare.size, 0, 'size of an empty compare-and-set')
      await agree('cm', bare, 'compare-and-set without writer')
      const lease = await b.acquireLease('cm', { holder: 'f', ttlMs: h.leaseTtlMs })
      h.clock.advance(1000)
      const fenced = await b.put('cm', bytes('fenced'), {
        ifMatch: bare.version,
        lease,
        writer: w1,
      })
      ensureSame(fenced.writer, w1, 'writer of a fenced compare-and-set')
      if (host) ensureEqual(fenced.updatedAt, h.clock.now(), 'updatedAt of a fenced write')
      await agree('cm', fenced, 'fenced compare-and-set')
      await b.releaseLease(lease)
      // A failed precondition reports the meta a head would.
      try {
        await b.put('cm', bytes('x'), { ifNoneMatch: '*' })
        fail('create-if-absent on an existing key succeeded')
      } catch (error) {
        if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
        ensureSame(error.context.current, fenced, 'context.current equals the stored meta')
      }
      const page = await other.list({ prefix: 'cm' })
      const entry = page.entries.find((e) => e.key === 'cm')
      ensureEqual(entry?.version, fenced.version, 'listed version after conditional writes')
      if (entry?.size !== undefined) ensureEqual(entry.size, fenced.size, 'listed size')
      if (entry?.updatedAt !== undefined) {
        ensureEqual(entry.updatedAt, fenced.updatedAt, 'listed updatedAt')
      }
      ensureSame(await listAll(other, { prefix: 'cm' }), ['cm'], 'listed once')
    },
  ),
]
