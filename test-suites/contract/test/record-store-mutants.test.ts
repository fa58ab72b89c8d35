import { AssertionError } from 'node:assert'
import { describe, expect, it } from 'vitest'
import { RECORD_STORE_CHECKS, runRecordStoreCheck } from '../src/index.js'
import { correctStores, RECORD_STORE_MUTANTS } from './record-store-mutants.js'
import { contractVerdict, findCheck } from './verdict.js'

const BUFFER_CHECK =
  'record-store/write-keeps-its-own-copy-and-read-and-scan-give-the-caller-its-own-also-for-buffers'

/** The record-store checks each mutant must fail, and the method each failure must name. */
const EXPECTED_FAILURES: Record<string, { checks: readonly string[]; method: string }> = {
  'inclusive after in scan': {
    checks: [
      'record-store/scan-after-is-exclusive',
      'record-store/scan-lists-in-ascending-utf-8-byte-order',
    ],
    method: 'scan',
  },
  'no upper bound on a prefix scan': {
    checks: ['record-store/scan-keeps-to-both-bounds-of-the-prefix'],
    method: 'scan',
  },
  'remove ignores the expected version': {
    checks: ['record-store/remove-takes-only-the-expected-version-and-never-lets-a-version-return'],
    method: 'remove',
  },
  'namespaces not kept apart': {
    checks: ['record-store/namespaces-are-kept-apart'],
    method: 'read',
  },
  'versions from a per-instance counter': {
    checks: ['record-store/versions-are-never-reused-for-a-key-across-instances'],
    method: 'write',
  },
  'a refused write throws a raw error': {
    checks: [
      'record-store/write-honours-absent-and-version-conditions-and-stores-nothing-when-refused',
      'record-store/of-concurrent-conditional-writes-exactly-one-wins',
    ],
    method: 'write',
  },
  'absent condition overwrites an existing record': {
    checks: [
      'record-store/write-honours-absent-and-version-conditions-and-stores-nothing-when-refused',
    ],
    method: 'write',
  },
  'scan in UTF-16 order': {
    checks: ['record-store/scan-lists-in-ascending-utf-8-byte-order'],
    method: 'scan',
  },
  'done on every full page': {
    checks: ['record-store/scan-honours-limit-and-done'],
    method: 'scan',
  },
  'an after equal to the prefix read as the start of the prefix': {
    checks: ['record-store/scan-after-a-stored-key-equal-to-the-prefix-is-exclusive'],
    method: 'scan',
  },
  'an overwrite indexes the key again': {
    checks: ['record-store/scan-lists-a-rewritten-or-re-created-key-once'],
    method: 'scan',
  },
  "write keeps the caller's Buffer (slice is a view)": {
    checks: [BUFFER_CHECK],
    method: 'write',
  },
  'read gives a view of the stored bytes': { checks: [BUFFER_CHECK], method: 'read' },
  'scan gives the stored bytes themselves': { checks: [BUFFER_CHECK], method: 'scan' },
  'maxValueBytes counted against the whole record': {
    checks: ['record-store/a-record-of-maxvaluebytes-plus-the-record-overhead-is-accepted-whole'],
    method: 'write',
  },
}

function checkById(id: string) {
  return findCheck(RECORD_STORE_CHECKS, id)
}

describe('the record-store tier fails on subtly broken stores, naming the method', () => {
  it('names a known check for every mutant', () => {
    expect(Object.keys(EXPECTED_FAILURES).sort()).toEqual(Object.keys(RECORD_STORE_MUTANTS).sort())
    for (const { checks } of Object.values(EXPECTED_FAILURES))
      for (const id of checks) checkById(id)
  })

  for (const [name, factory] of Object.entries(RECORD_STORE_MUTANTS)) {
    const expected = EXPECTED_FAILURES[name]
    for (const id of expected?.checks ?? []) {
      it(`${name}: fails ${id}, which the correct store passes`, async () => {
        const check = checkById(id)
        await expect(
          runRecordStoreCheck(check, { name: 'correct', create: correctStores() }),
        ).resolves.toBeUndefined()
        let caught: unknown
        try {
          await runRecordStoreCheck(check, { name: `mutant: ${name}`, create: factory() })
        } catch (error) {
          caught = error
        }
        expect(caught, 'the check must fail on the mutant').toBeDefined()
        const verdict = contractVerdict(caught)
        expect(verdict, `a verdict, not a crash: ${String(caught)}`).toBeInstanceOf(AssertionError)
        expect(verdict?.message).toMatch(new RegExp(`^RecordStore\\.${expected?.method}: `))
      })
    }
  }
})
