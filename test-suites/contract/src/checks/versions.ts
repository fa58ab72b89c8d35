import type { ValueMeta } from '@agent-state/core'
import { bytes, ensure, ensureBytes, ensureEqual, ensureSame, rejectsWith } from '../assert.js'
import { type ContractCheck, check } from '../check.js'

/** Versions, compare-and-set and ABA. */
export const versionChecks: ContractCheck[] = [
  check('versions', 'compare-and-set succeeds on a match and fails on a mismatch', async (h) => {
    const b = await h.backend()
    const m1 = await b.put('cas', bytes('1'))
    const m2 = await b.put('cas', bytes('2'), { ifMatch: m1.version })
    ensure(m2.version !== m1.version, 'CAS write changes the version')
    const error = await rejectsWith(
      b.put('cas', bytes('3'), { ifMatch: m1.version }),
      'PRECONDITION_FAILED',
      'CAS with a stale version',
    )
    ensureSame(error.context.current, m2, 'PRECONDITION_FAILED context.current is the current meta')
    const got = await b.get('cas')
    ensureBytes(got?.value, bytes('2'), 'nothing stored by a failed CAS')
    ensureEqual(got?.meta.version, m2.version, 'version unchanged by a failed CAS')
  }),

  check('versions', 'create-if-absent and ifMatch on a missing key', async (h) => {
    const b = await h.backend()
    const created = await b.put('once', bytes('a'), { ifNoneMatch: '*' })
    const error = await rejectsWith(
      b.put('once', bytes('b'), { ifNoneMatch: '*' }),
      'PRECONDITION_FAILED',
      'create-if-absent on an existing key',
    )
    ensureSame(error.context.current, created, 'context.current of a failed create')
    ensureBytes((await b.get('once'))?.value, bytes('a'), 'nothing stored by a failed create')
    const missing = await rejectsWith(
      b.put('missing', bytes('x'), { ifMatch: created.version }),
      'PRECONDITION_FAILED',
      'ifMatch on a missing key',
    )
    ensureEqual(missing.context.current, null, 'context.current is null for a missing key')
    ensureEqual(await b.get('missing'), null, 'nothing stored by ifMatch on a missing key')
    await b.delete('once')
    await b.put('once', bytes('c'), { ifNoneMatch: '*' })
    ensureBytes((await b.get('once'))?.value, bytes('c'), 'create after delete succeeds')
  }),

  check('versions', 'an identical rewrite changes the version', async (h) => {
    const b = await h.backend()
    const m1 = await b.put('same', bytes('same bytes'))
    const m2 = await b.put('same', bytes('same bytes'))
    ensure(m1.version !== m2.version, 'rewriting identical bytes must change the version')
    await rejectsWith(
      b.put('same', bytes('same bytes'), { ifMatch: m1.version }),
      'PRECONDITION_FAILED',
      'CAS with the version before an identical rewrite',
    )
  }),

  check('versions', 'delete and re-create never brings back an earlier version', async (h) => {
    const b = await h.backend()
    const seen = new Set<string>()
    const record = (meta: ValueMeta, what: string): void => {
      ensure(!seen.has(meta.version), `${what}: version ${meta.version} was seen before (ABA)`)
      seen.add(meta.version)
    }
    for (let round = 0; round < 8; round++) {
      record(await b.put('aba', bytes('v')), `round ${round} create`)
      record(await b.put('aba', bytes('v')), `round ${round} rewrite`)
      const old = [...seen][0] as string
      await rejectsWith(
        b.put('aba', bytes('x'), { ifMatch: old }),
        'PRECONDITION_FAILED',
        'CAS with an old version',
      )
      ensureEqual(await b.delete('aba'), true, 'delete')
    }
    const other = await h.backend()
    record(await other.put('aba', bytes('v'), { ifNoneMatch: '*' }), 'final create')
  }),

  check('versions', 'conditional delete', async (h) => {
    const b = await h.backend()
    const m1 = await b.put('cd', bytes('1'))
    const m2 = await b.put('cd', bytes('2'))
    const error = await rejectsWith(
      b.delete('cd', { ifMatch: m1.version }),
      'PRECONDITION_FAILED',
      'conditional delete with a stale version',
    )
    ensureSame(error.context.current, m2, 'context.current of a failed conditional delete')
    ensureBytes((await b.get('cd'))?.value, bytes('2'), 'value kept after a failed delete')
    ensureEqual(await b.delete('cd', { ifMatch: m2.version }), true, 'conditional delete')
    ensureEqual(await b.get('cd'), null, 'gone after conditional delete')
    const missing = await rejectsWith(
      b.delete('cd', { ifMatch: m2.version }),
      'PRECONDITION_FAILED',
      'conditional delete of a missing key',
    )
    ensureEqual(missing.context.current, null, 'context.current null for a missing key')
  }),
]
