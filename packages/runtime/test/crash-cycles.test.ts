import { afterEach, describe, expect, it, vi } from 'vitest'

/** The ledger crash tests' cycle knob, imported fresh under a given `AGENT_STATE_CRASH_CYCLES`. */
async function knobWith(value: string): Promise<number> {
  vi.stubEnv('AGENT_STATE_CRASH_CYCLES', value)
  vi.resetModules()
  return (await import('./crash-cycles.js')).LEDGER_CRASH_CYCLES
}

afterEach(() => {
  vi.unstubAllEnvs()
})

describe("the effect ledger crash tests' cycle knob has the contract's floor", () => {
  it('a count below 10 fails the crash test files (they import this knob), it never passes', async () => {
    await expect(knobWith('9')).rejects.toThrow(
      'the effect ledger crash test is configured with 9 kill -9 cycles, below the floor of 10: it would prove nothing',
    )
    await expect(knobWith('0')).rejects.toThrow(/configured with 0 kill -9 cycles, below the floor/)
    await expect(knobWith('ten')).rejects.toThrow('AGENT_STATE_CRASH_CYCLES must be a whole number')
  })

  it("the wake kill test: a count below 10 fails it, 20 (issue 27's) is its default", async () => {
    vi.stubEnv('AGENT_STATE_CRASH_CYCLES', '9')
    vi.resetModules()
    await expect(import('./crash-cycles.js')).rejects.toThrow(/configured with 9 kill -9 cycles/)
    vi.stubEnv('AGENT_STATE_CRASH_CYCLES', '')
    vi.resetModules()
    expect((await import('./crash-cycles.js')).WAKE_KILL_CYCLES).toBe(20)
  })

  it("the wake kill test's wake counts: 1000 and S3 200 by default, below 60 the file fails", async () => {
    vi.stubEnv('AGENT_STATE_CRASH_CYCLES', '')
    vi.resetModules()
    const knobs = await import('./crash-cycles.js')
    expect([knobs.WAKE_KILL_WAKES, knobs.WAKE_KILL_WAKES_S3]).toEqual([1000, 200])
    vi.stubEnv('AGENT_STATE_WAKE_KILL_WAKES', '59')
    vi.resetModules()
    await expect(import('./crash-cycles.js')).rejects.toThrow(
      "AGENT_STATE_WAKE_KILL_WAKES is 59, below the wake kill test's floor of 60",
    )
    vi.stubEnv('AGENT_STATE_WAKE_KILL_WAKES', '')
    vi.stubEnv('AGENT_STATE_WAKE_KILL_WAKES_S3', 'many')
    vi.resetModules()
    await expect(import('./crash-cycles.js')).rejects.toThrow(
      'AGENT_STATE_WAKE_KILL_WAKES_S3 must be a whole number (got "many")',
    )
    vi.stubEnv('AGENT_STATE_WAKE_KILL_WAKES_S3', '60')
    vi.resetModules()
    expect((await import('./crash-cycles.js')).WAKE_KILL_WAKES_S3).toBe(60)
  })

  it('the floor itself and the default of 50 are accepted', async () => {
    expect(await knobWith('10')).toBe(10)
    expect(await knobWith('')).toBe(50)
  })
})
