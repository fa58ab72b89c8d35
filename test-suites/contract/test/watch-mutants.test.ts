import { fileURLToPath } from 'node:url'
import { createMemoryStore } from '@agent-state/memory'
import { describe, expect, it } from 'vitest'
import { CONTRACT_CHECKS, type ContractOptions, runContractCheck } from '../src/index.js'
import { checkById, contractVerdict } from './verdict.js'
import { interruptRelay, type RelayMutation, relayBackend } from './watch-relay.js'

const child = fileURLToPath(new URL('./watch-relay-child.ts', import.meta.url))

/** The change-notification check each mutant must fail (and the correct relay must pass). */
const EXPECTED_FAILURES: Record<Exclude<RelayMutation, 'none'>, string> = {
  'no resync after a reconnect':
    'change-notification/an-interrupted-watch-resyncs-and-misses-no-write-made-meanwhile',
  'drops the hint of the last write of a burst':
    'change-notification/after-a-burst-by-several-processes-every-watcher-has-re-read-the-last-write-of-every-key',
  'hints before the write is durable':
    'change-notification/after-a-burst-by-several-processes-every-watcher-has-re-read-the-last-write-of-every-key',
  'leaks its watch handle':
    'change-notification/aborting-a-watch-or-closing-the-backend-ends-it-and-the-process-exits-on-its-own',
}

function options(mutation: RelayMutation): ContractOptions {
  const store = createMemoryStore()
  return {
    name: `relay: ${mutation}`,
    create: relayBackend(store, mutation),
    process: { module: child, options: { mutation } },
    watchInterrupt: interruptRelay,
    // The tier's margin is for loaded hosts; the relay is in-process, so a short one keeps the
    // failing runs (which wait it out) quick without changing what is judged.
    scale: { watchMarginMs: 1000 },
  }
}

describe('the change-notification tier fails on broken watches', () => {
  it('names a known check for every mutant', () => {
    for (const id of Object.values(EXPECTED_FAILURES)) checkById(id)
  })

  it('passes every check of the tier on the correct relay', async () => {
    for (const check of CONTRACT_CHECKS.filter((c) => c.category === 'change-notification')) {
      await expect(runContractCheck(check, options('none')), check.id).resolves.toBeTypeOf('object')
    }
  }, 120_000)

  it('fails a claim without a watch method, and never passes with zero writes', async () => {
    const claimOnly: ContractOptions = {
      ...options('none'),
      create: (ctx) => {
        const { watch: _watch, ...rest } = relayBackend(createMemoryStore(), 'none')(ctx)
        return rest
      },
    }
    const delay = checkById(
      'change-notification/a-write-by-another-process-is-hinted-within-the-claimed-delay',
    )
    const burst = checkById(EXPECTED_FAILURES['drops the hint of the last write of a burst'])
    for (const [what, run] of [
      ['no watch method', () => runContractCheck(delay, claimOnly)],
      [
        '0 timed writes',
        () => runContractCheck(delay, { ...options('none'), scale: { watchDelayWrites: 0 } }),
      ],
      [
        '0 burst writes',
        () => runContractCheck(burst, { ...options('none'), scale: { watchBurstWrites: 0 } }),
      ],
    ] as const) {
      let caught: unknown
      try {
        await run()
      } catch (error) {
        caught = error
      }
      expect(contractVerdict(caught), `${what}: ${String(caught)}`).toBeDefined()
    }
  }, 60_000)

  for (const [mutation, id] of Object.entries(EXPECTED_FAILURES)) {
    it(`fails ${id} on a relay that ${mutation}`, async () => {
      let caught: unknown
      try {
        await runContractCheck(checkById(id), options(mutation as RelayMutation))
      } catch (error) {
        caught = error
      }
      expect(caught, 'the check must fail on the mutant').toBeDefined()
      expect(
        contractVerdict(caught),
        `a contract verdict, not a crash: ${String(caught)}`,
      ).toBeDefined()
    }, 120_000)
  }
})
