import type { Backend } from '@agent-state/core'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { describe, expect, it } from 'vitest'
import {
  CONTRACT_CHECKS,
  type ContractContext,
  type ContractOptions,
  runContractCheck,
} from '../src/index.js'
import { MUTANTS } from './memory-mutants.js'

/** The checks each mutant must fail (and the correct memory backend must pass). */
const EXPECTED_FAILURES: Record<string, readonly string[]> = {
  'racy compare-and-set (awaits between check and write)': [
    'concurrency/create-if-absent-has-exactly-one-winner',
    'concurrency/n-by-m-compare-and-set-increments-lose-no-update',
    'linearizability/concurrent-compare-and-set-histories-are-linearizable',
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
  'unfenced put accepted over a live lease': [
    'leases/fenced-writes-succeed-and-unfenced-writes-are-lease-held-while-live',
    'property/model-based-random-command-sequences-match-the-model',
  ],
}

function checkById(id: string) {
  const found = CONTRACT_CHECKS.find((c) => c.id === id)
  if (found === undefined) throw new Error(`no check ${id}`)
  return found
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
          await expect(
            runContractCheck(
              check,
              options('memory', (ctx) =>
                createMemoryBackend({ store: good, namespace: ctx.namespace, clock: ctx.clock }),
              ),
            ),
          ).resolves.toBeUndefined()
          const bad = createMemoryStore()
          await expect(
            runContractCheck(check, options(`mutant: ${name}`, factory(bad))),
          ).rejects.toThrow()
        })
      }
    })
  }
})
