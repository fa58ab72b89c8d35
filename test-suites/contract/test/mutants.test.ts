import { AssertionError } from 'node:assert'
import type { Backend } from '@agent-state/core'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { describe, expect, it } from 'vitest'
import { type ContractContext, type ContractOptions, runContractCheck } from '../src/index.js'
import { FENCE_MUTANTS, memoryWithoutFenceClaim } from './fence-mutants.js'
import { HOLE_MUTANTS } from './hole-mutants.js'
import { MUTANTS as FIRST_MUTANTS } from './memory-mutants.js'
import { RULE_MUTANTS } from './rule-mutants.js'
import { memoryWithGetMany, SURVIVOR_MUTANTS } from './survivor-mutants.js'
import { checkById, contractVerdict } from './verdict.js'

const MUTANTS = {
  ...FIRST_MUTANTS,
  ...HOLE_MUTANTS,
  ...RULE_MUTANTS,
  ...SURVIVOR_MUTANTS,
  ...FENCE_MUTANTS,
}

const UNCLAIMED_FENCE =
  'leases/cross-key-fence-refused-with-unsupported-where-crosskeyfence-is-not-claimed'

/** The checks each mutant must fail (and the correct memory backend must pass). */
const EXPECTED_FAILURES: Record<string, readonly string[]> = {
  'racy compare-and-set (awaits between check and write)': [
    'concurrency/create-if-absent-has-exactly-one-winner',
    'concurrency/n-by-m-compare-and-set-increments-lose-no-update',
    'linearizability/concurrent-compare-and-set-and-delete-histories-are-linearizable',
  ],
  'racy lease acquire (awaits between the free check and the grant)': [
    'concurrency/never-two-lease-holders-at-once-under-acquire-storms',
  ],
  'list sorted in UTF-16 order': [
    'keys/lists-astral-characters-after-u-e000-u-ffff-in-utf-8-byte-order',
    'keys/odd-keys-round-trip-exactly-through-put-get-and-list',
    'property/model-based-random-command-sequences-match-the-model',
  ],
  'inclusive cursor': [
    'listing/limit-and-exclusive-cursor-visit-every-key-exactly-once',
    'listing/deleted-keys-are-never-listed',
    'property/model-based-random-command-sequences-match-the-model',
  ],
  'version unchanged on identical rewrite': [
    'versions/an-identical-rewrite-changes-the-version',
    'versions/delete-and-re-create-never-brings-back-an-earlier-version',
  ],
  'version reused after delete and re-create': [
    'versions/delete-and-re-create-never-brings-back-an-earlier-version',
    'property/model-based-random-command-sequences-match-the-model',
  ],
  'lease that never expires': [
    'leases/a-lease-expires-and-renew-after-expiry-is-lease-lost',
    'leases/release-never-drops-a-newer-holder-lease',
    'property/model-based-random-command-sequences-match-the-model',
  ],
  'renew after expiry succeeds': ['leases/a-lease-expires-and-renew-after-expiry-is-lease-lost'],
  'release drops a newer holder lease': [
    'leases/release-never-drops-a-newer-holder-lease',
    'property/model-based-random-command-sequences-match-the-model',
  ],
  'fencing token reset after release': [
    'leases/fencing-tokens-strictly-increase-after-release-expiry-and-delete',
    'property/model-based-random-command-sequences-match-the-model',
  ],
  'fencing compares holder names instead of tokens': [
    'leases/a-holder-that-re-acquires-fences-out-its-own-earlier-lease-by-token',
    'property/model-based-random-command-sequences-match-the-model',
  ],
  'list without a limit returns every key': [
    'listing/the-default-limit-is-1000-and-a-walk-over-more-keys-sees-each-once',
  ],
  'delimiter ignored without a prefix': [
    'listing/delimiter-without-a-prefix-groups-from-the-root',
    'listing/the-default-limit-is-1000-and-a-walk-over-more-keys-sees-each-once',
  ],
  'listed updatedAt differs from head': [
    'listing/byte-order-and-prefix-semantics',
    'metadata/meta-returned-by-conditional-and-fenced-writes-equals-head-get-and-list',
  ],
  'trailing dot segments accepted as keys': [
    'keys/rejects-invalid-keys-with-invalid-key-and-writes-nothing',
  ],
  'renew and release still work after close': [
    'errors/closed-and-invalid-key-on-renewlease-and-releaselease',
  ],
  'renew and release of an invalid key answer instead of INVALID_KEY': [
    'errors/closed-and-invalid-key-on-renewlease-and-releaselease',
  ],
  'racy conditional delete (awaits between check and delete)': [
    'concurrency/concurrent-conditional-deletes-of-one-version-have-one-winner',
    'linearizability/concurrent-compare-and-set-and-delete-histories-are-linearizable',
  ],
  'writer dropped from the meta of conditional writes': [
    'metadata/meta-returned-by-conditional-and-fenced-writes-equals-head-get-and-list',
  ],
  'a view is stored as its whole underlying buffer': [
    'basic/stores-exactly-the-bytes-of-views-buffers-and-edge-sizes',
  ],
  'a lease is still live at its expiresAt': [
    'leases/on-the-injected-host-clock-a-lease-is-live-until-expiresat-and-expired-at-it',
  ],
  'release of an expired unsuperseded lease answers false': [
    'leases/a-stale-release-resolves-false-and-never-throws',
  ],
  'durable store forgets deleted keys (lease and fencing counter) on reopen': [
    'durability/a-fenced-delete-survives-reopen-with-its-lease-and-fencing-counter',
  ],
  'size of the first value kept after an unconditional overwrite': [
    'metadata/an-unconditional-overwrite-with-a-value-of-another-length-reports-the-new-size',
  ],
  'a fenced write or delete skips its precondition': [
    'leases/a-fenced-write-or-delete-that-also-names-ifmatch-or-ifnonematch-must-pass-both-checks',
  ],
  'continuation pages drop the prefix': [
    'listing/every-continuation-page-of-a-prefixed-listing-stays-inside-the-prefix',
  ],
  "a holder's delete of the value drops the lease": [
    'leases/a-lease-lives-on-when-its-holder-deletes-the-key-s-value',
  ],
  'lease lookup matches a leased prefix of the key': [
    'leases/a-lease-belongs-to-its-exact-key-never-to-a-prefix-of-it',
  ],
  'TTLs rounded up to whole seconds': [
    'leases/ttls-under-a-second-and-not-whole-seconds-expire-exactly-on-the-injected-clock',
  ],
  'renew extends from the old expiresAt': [
    'leases/renewlease-extends-from-the-renewal-time-not-from-the-old-expiresat',
  ],
  'updatedAt from the system clock': [
    'metadata/updatedat-is-on-the-lease-clock-the-backend-declares-and-follows-an-injected-one',
  ],
  'delimiter groups do not count toward limit': ['listing/delimiter-groups-count-toward-limit'],
  'close closes the storage every instance shares': [
    'errors/close-of-one-instance-leaves-the-others-on-the-same-storage-working',
  ],
  'claims 64 MiB but refuses values above 16 MiB': ['errors/value-too-large-beyond-maxvaluebytes'],
  'a cursor that decodes to any JSON restarts the listing': [
    'listing/a-bad-cursor-is-invalid-argument',
  ],
  'destroy leaves the leases behind': [
    'basic/destroy-removes-every-value-and-lease-of-the-namespace',
  ],
  'renew of a released lease crashes': [
    'leases/a-lease-lives-on-when-its-holder-deletes-the-key-s-value',
  ],
  'a watch without the changeNotification claim': [
    'basic/declares-contract-version-1-a-name-and-well-formed-capabilities',
  ],
  "a Buffer is stored as a view of the caller's memory": [
    'basic/get-returns-a-copy-unaffected-by-later-buffer-writes',
  ],
  'a scan restart after deleted keys skips the keys that extend them': [
    'listing/deleted-keys-are-never-listed',
  ],
  'unfenced put accepted over a live lease': [
    'leases/fenced-writes-succeed-and-unfenced-writes-are-lease-held-while-live',
    'property/model-based-random-command-sequences-match-the-model',
  ],
  'lease and precondition errors with an empty message': [
    'errors/lease-held-lease-lost-and-precondition-failed-name-their-key-in-message-and-context',
  ],
  'lease and precondition errors without context': [
    'errors/lease-held-lease-lost-and-precondition-failed-name-their-key-in-message-and-context',
  ],
  'LEASE_LOST reports no current token while another lease is live': [
    'errors/lease-held-lease-lost-and-precondition-failed-name-their-key-in-message-and-context',
  ],
  'a capability present with the value undefined': [
    'basic/declares-contract-version-1-a-name-and-well-formed-capabilities',
  ],
  'watch requires its options argument': [
    'change-notification/a-watch-opened-without-options-starts-with-resync-hints-a-write-and-ends-at-close',
  ],
  'CLOSED with an empty message': ['errors/closed-after-close'],
  'a bad cursor refused with an empty message': ['listing/a-bad-cursor-is-invalid-argument'],
  "the store's watch-interrupt declaration not carried over": [
    'change-notification/the-instance-or-the-suite-declares-how-a-watch-channel-can-be-cut',
  ],
  'getMany answers in key order instead of the order asked': [
    'get-many/getmany-answers-in-the-order-of-the-keys-with-null-for-missing-and-deleted-keys-and-closed-after-close',
    'get-many/getmany-agrees-with-get-for-many-keys-including-odd-and-astral-keys',
  ],
  'getMany hands duplicates one shared value': [
    'get-many/getmany-answers-in-the-order-of-the-keys-with-null-for-missing-and-deleted-keys-and-closed-after-close',
  ],
  'getMany answers nulls after close': [
    'get-many/getmany-answers-in-the-order-of-the-keys-with-null-for-missing-and-deleted-keys-and-closed-after-close',
  ],
  'getMany matches keys after NFC normalization': [
    'get-many/getmany-agrees-with-get-for-many-keys-including-odd-and-astral-keys',
  ],
  'getMany without a bound on the number of keys': [
    'get-many/getmany-takes-at-most-1000-keys-and-refuses-more-with-invalid-argument',
  ],
  'getMany answers null for an invalid key': [
    'get-many/getmany-refuses-an-invalid-key-anywhere-in-the-list-with-invalid-key-naming-its-position',
  ],
  'a fence on the written key itself taken as its lease': [
    'leases/cross-key-fence-arguments-are-checked-on-every-backend',
  ],
  'a fence is ignored and the write stored unfenced': [
    'leases/cross-key-fence-a-live-fence-writes-a-released-expired-or-re-acquired-one-is-lease-lost-by-token',
    'leases/cross-key-fence-checked-before-the-written-key-own-lease-and-the-precondition',
  ],
  'a fence judged by holder name instead of token': [
    'leases/cross-key-fence-a-live-fence-writes-a-released-expired-or-re-acquired-one-is-lease-lost-by-token',
  ],
  'a fence that never expires': [
    'leases/cross-key-fence-a-live-fence-writes-a-released-expired-or-re-acquired-one-is-lease-lost-by-token',
  ],
  'a fence checked after the precondition': [
    'leases/cross-key-fence-checked-before-the-written-key-own-lease-and-the-precondition',
  ],
  "a fence that stands in for the written key's own lease": [
    'leases/cross-key-fence-checked-before-the-written-key-own-lease-and-the-precondition',
  ],
  'a racy fence (awaits between the fence check and the write)': [
    'leases/cross-key-fence-a-write-in-flight-when-its-fence-is-taken-over-is-ordered-before-the-takeover',
  ],
  'a backend without the claim stores a fenced write unfenced': [UNCLAIMED_FENCE],
}

function options(name: string, create: (ctx: ContractContext) => Backend): ContractOptions {
  return { name, create }
}

describe('the suite fails on subtly broken backends', () => {
  it('names a known check for every mutant', () => {
    expect(Object.keys(EXPECTED_FAILURES).sort()).toEqual(Object.keys(MUTANTS).sort())
    for (const ids of Object.values(EXPECTED_FAILURES)) for (const id of ids) checkById(id)
  })

  for (const [name, factory] of Object.entries(MUTANTS)) {
    describe(name, () => {
      for (const id of EXPECTED_FAILURES[name] ?? []) {
        it(`fails ${id} on the mutant and passes it on the memory backend`, async () => {
          const check = checkById(id)
          const good = createMemoryStore()
          // The multi-key read checks need a getMany: the reference is core's generic one.
          // The unclaimed fence check needs a backend that does not claim it.
          const reference =
            check.category === 'get-many'
              ? (ctx: ContractContext) => memoryWithGetMany(good, ctx)
              : check.id === UNCLAIMED_FENCE
                ? (ctx: ContractContext) => memoryWithoutFenceClaim(good, ctx)
                : (ctx: ContractContext) =>
                    createMemoryBackend({ store: good, namespace: ctx.namespace, clock: ctx.clock })
          await expect(runContractCheck(check, options('memory', reference))).resolves.toBeTypeOf(
            'object',
          )
          const bad = createMemoryStore()
          let caught: unknown
          try {
            await runContractCheck(check, options(`mutant: ${name}`, factory(bad)))
          } catch (error) {
            caught = error
          }
          expect(caught, 'the check must fail on the mutant').toBeDefined()
          expect(
            contractVerdict(caught),
            `a contract verdict, not a crash: ${String(caught)}`,
          ).toBeInstanceOf(AssertionError)
        })
      }
    })
  }
})
