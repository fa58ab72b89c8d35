import { afterAll, describe, expect, it } from 'vitest'
import { probeCapabilities, runContractCheck, skipReason } from '../src/index.js'
import { CAPABILITY_MUTANTS, mutantOptions } from './capability-mutants.js'
import { fileRecordOptions, removeFileRecordRoots } from './file-record-options.js'
import { checkById, failingVerdict } from './verdict.js'

const DIED =
  'durability/a-write-acknowledged-by-a-process-killed-with-sigkill-reads-back-at-its-version-from-another-process'
const ONE_WINNER =
  'multi-process/create-if-absent-and-compare-and-set-across-processes-have-exactly-one-winner'
const BASIC = 'basic/declares-contract-version-1-a-name-and-well-formed-capabilities'

/** The check that disproves each capability claim on the memory backends. */
const DISPROVED_BY = { durable: DIED, multiProcess: ONE_WINNER } as const

afterAll(removeFileRecordRoots)

describe('a false durable or multiProcess claim fails the suite', () => {
  it('passes the process-death check on a durable backend', async () => {
    const options = fileRecordOptions({ name: 'file-records' })
    const caps = await probeCapabilities(options)
    expect(skipReason(checkById(DIED), caps, options)).toBeUndefined()
    await expect(runContractCheck(checkById(DIED), options, caps)).resolves.toBeTypeOf('object')
  }, 60_000)

  for (const [name, mutant] of Object.entries(CAPABILITY_MUTANTS)) {
    it(`${name}: the check it claims runs and fails`, async () => {
      const options = mutantOptions(name, { processes: 2 })
      const caps = await probeCapabilities(options)
      const id = DISPROVED_BY[mutant.capability]
      expect(skipReason(checkById(id), caps, options)).toBeUndefined()
      const error = await failingVerdict(runContractCheck(checkById(id), options, caps))
      expect(error.message).toMatch(
        mutant.capability === 'durable'
          ? /died\/acked is absent after its writer was killed: the acknowledged write .* was lost/
          : /round 0: processes that won create-if-absent: expected 1, got 2/,
      )
    }, 60_000)

    // Stryker's view of the mutant: the suite probes while vitest collects tests, before the
    // mutant is switched on, so only the instances the checks create claim the capability.
    it(`${name}: an instance claiming what the probe did not fails every check`, async () => {
      const options = mutantOptions(name, { claimAfter: 1 })
      const caps = await probeCapabilities(options)
      expect(caps[mutant.capability]).toBe(false)
      const error = await failingVerdict(runContractCheck(checkById(BASIC), options, caps))
      expect(error.message).toMatch(
        new RegExp(
          `an instance declares capabilities .*"${mutant.capability}":true.*, but the suite planned its checks from the probe instance's .*"${mutant.capability}":false.*: every instance of a backend must declare the same capabilities`,
        ),
      )
    }, 60_000)
  }

  it('fails, not skips, the process-death check of a claimed durable without a process option', async () => {
    const options = mutantOptions('the memory backend claims durable', { withProcess: false })
    const caps = await probeCapabilities(options)
    expect(skipReason(checkById(DIED), caps, options)).toBeUndefined()
    let caught: unknown
    try {
      await runContractCheck(checkById(DIED), options, caps)
    } catch (error) {
      caught = error
    }
    expect(String(caught)).toMatch(
      /claims durable but no `process` option .* fails instead of being skipped/,
    )
  }, 60_000)
})
