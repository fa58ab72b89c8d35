import { afterAll, describe, expect, it } from 'vitest'
import {
  type ContractOptions,
  probeCapabilities,
  runContractCheck,
  runContractCheckOutcome,
  skipReason,
} from '../src/index.js'
import { fileRecordOptions, removeFileRecordRoots } from './file-record-options.js'
import type { FileStoreMode } from './file-record-store.js'
import { checkById, failingVerdict } from './verdict.js'

afterAll(removeFileRecordRoots)

/** The store in `mode`, its crash tier at `crashCycles` kills, with its child process unless told. */
function fileOptions(
  mode: FileStoreMode,
  crashCycles: number,
  withProcess = true,
): ContractOptions {
  return fileRecordOptions({ mode, crashCycles, withProcess })
}

const CRASH = 'crash/acknowledged-writes-survive-kill-9-and-nothing-is-torn'
const FROZEN =
  'multi-process/a-holder-frozen-mid-write-never-blocks-a-takeover-and-is-refused-when-it-wakes'
const MP_COUNTER = 'multi-process/n-by-m-compare-and-set-increments-across-processes-lose-no-update'

describe('the multi-process and crash tiers fail on broken file stores', () => {
  it('catches a check-then-write compare-and-set across processes', async () => {
    const error = await failingVerdict(
      runContractCheck(checkById(MP_COUNTER), fileOptions('racy', 1)),
    )
    expect(error.message).toMatch(/counter after N×M increments/)
  }, 120_000)

  it('catches a check-then-write compare-and-set racing on one version across processes', async () => {
    const id =
      'multi-process/create-if-absent-and-compare-and-set-across-processes-have-exactly-one-winner'
    const error = await failingVerdict(runContractCheck(checkById(id), fileOptions('racy', 10)))
    expect(error.message).toMatch(/processes that won (create-if-absent|compare-and-set)/)
    await runContractCheck(checkById(id), fileOptions('correct', 10))
  }, 120_000)

  it('catches a store that acknowledges writes before they are durable', async () => {
    const error = await failingVerdict(runContractCheck(checkById(CRASH), fileOptions('lazy', 10)))
    expect(error.message).toMatch(/acknowledged write was lost/)
    expect(error).toHaveProperty('contractScale.cyclesConfigured', 10)
  }, 180_000)

  it('fails a crash tier configured below the floor (crashCycles 0 used to pass doing nothing)', async () => {
    for (const cycles of [0, 3]) {
      const error = await failingVerdict(
        runContractCheck(checkById(CRASH), fileOptions('lazy', cycles)),
      )
      expect(error.message).toMatch(/below the floor of 10/)
      expect(error).toHaveProperty('contractScale.cyclesVerified', 0)
    }
  }, 60_000)

  it('fails, not skips, the tiers of a claimed multiProcess without a process option', async () => {
    const options = fileOptions('correct', 10, false)
    const caps = await probeCapabilities(options)
    expect(caps.multiProcess).toBe(true)
    for (const id of [MP_COUNTER, CRASH]) {
      const check = checkById(id)
      expect(skipReason(check, caps, options)).toBeUndefined()
      let caught: unknown
      try {
        await runContractCheck(check, options, caps)
      } catch (error) {
        caught = error
      }
      expect(String(caught)).toMatch(
        /claims multiProcess but no `process` option .* fails instead of being skipped/,
      )
    }
  }, 60_000)

  it('catches a per-process name cache that other processes do not invalidate', async () => {
    const id =
      'multi-process/keys-present-for-the-whole-walk-are-listed-once-while-other-processes-write'
    // Within one process the cache is right: the in-process listing check passes.
    await runContractCheck(
      checkById(
        'listing/keys-present-for-the-whole-walk-appear-exactly-once-under-concurrent-writes',
      ),
      fileOptions('cached-names', 10),
    )
    const error = await failingVerdict(
      runContractCheck(checkById(id), fileOptions('cached-names', 10)),
    )
    expect(error.message).toMatch(/stable key mpl\/\d+ listed 0 times/)
    await runContractCheck(checkById(id), fileOptions('correct', 10))
  }, 180_000)

  it('reports the scale the crash tier ran at', async () => {
    const scale = await runContractCheck(checkById(CRASH), fileOptions('correct', 10))
    expect(scale).toMatchObject({ cyclesConfigured: 10, cyclesVerified: 10 })
    expect(scale.acknowledgedWrites).toBeGreaterThanOrEqual(10)
  }, 180_000)

  it('catches a per-key lock that a writer frozen inside its commit keeps', async () => {
    const error = await failingVerdict(
      runContractCheck(checkById(FROZEN), fileOptions('locked', 1)),
    )
    expect(error.message).toMatch(
      /round \d+ \(.*\): the contender's takeover failed with UNAVAILABLE/,
    )
    const scale = await runContractCheck(checkById(FROZEN), fileOptions('correct', 1))
    expect(scale).toMatchObject({ rounds: 10, randomRounds: 5, steppedRounds: 5, limitedRounds: 0 })
  }, 300_000)

  it('verifies a declared frozen-writer limitation and fails any other behaviour', async () => {
    const declared = {
      code: 'UNAVAILABLE',
      message: /record locked/,
      busyTimeoutMs: 3000,
    }
    const limited = await runContractCheckOutcome(checkById(FROZEN), {
      ...fileOptions('locked', 1),
      frozenWriterLimitation: declared,
    })
    expect(limited.limitation).toMatch(/failed fast with UNAVAILABLE/)
    expect(limited.scale.limitedRounds).toBeGreaterThanOrEqual(5)
    // A message other than the declared one.
    const wrongMessage = await failingVerdict(
      runContractCheck(checkById(FROZEN), {
        ...fileOptions('locked', 1),
        frozenWriterLimitation: { ...declared, message: /a process holds the database lock/ },
      }),
    )
    expect(wrongMessage.message).toMatch(/the declared limitation's message/)
    // Slower than the declared busy timeout + 1 s.
    const slow = await failingVerdict(
      runContractCheck(checkById(FROZEN), {
        ...fileOptions('locked', 1),
        frozenWriterLimitation: { ...declared, busyTimeoutMs: 500 },
      }),
    )
    expect(slow.message).toMatch(/the declared limitation fails fast/)
    // A backend without the limitation must not declare it.
    const stale = await failingVerdict(
      runContractCheck(checkById(FROZEN), {
        ...fileOptions('correct', 1),
        frozenWriterLimitation: declared,
      }),
    )
    expect(stale.message).toMatch(/remove the declaration/)
  }, 600_000)

  it('fails a frozen-writer tier configured below the floor of 10 rounds', async () => {
    const error = await failingVerdict(
      runContractCheck(checkById(FROZEN), {
        ...fileOptions('correct', 1),
        scale: { frozenRounds: 3 },
      }),
    )
    expect(error.message).toMatch(/configured with 3 rounds, below the floor of 10/)
  }, 60_000)
})
