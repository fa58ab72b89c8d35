import { afterEach, describe, expect, it, vi } from 'vitest'

/** The group commit crash test's cycle knob, imported fresh under a given `AGENT_STATE_CRASH_CYCLES`. */
async function knobWith(value: string): Promise<number> {
  vi.stubEnv('AGENT_STATE_CRASH_CYCLES', value)
  vi.resetModules()
  return (await import('./crash-cycles.js')).GROUP_COMMIT_CRASH_CYCLES
}

afterEach(() => {
  vi.unstubAllEnvs()
})

describe("the group commit crash test's cycle knob has the contract's floor", () => {
  it('a count below 10 fails the crash test file (it imports this knob), it never passes', async () => {
    await expect(knobWith('9')).rejects.toThrow(
      'the group commit crash test is configured with 9 kill -9 cycles, below the floor of 10: it would prove nothing',
    )
    await expect(knobWith('3')).rejects.toThrow(/configured with 3 kill -9 cycles, below the floor/)
  })

  it('the floor, which is the default, is accepted', async () => {
    expect(await knobWith('10')).toBe(10)
    expect(await knobWith('')).toBe(10)
  })
})
