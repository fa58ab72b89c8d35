/**
 * The native queue path's checks run against deliberately broken Redis
 * scripts (the backend's own `withScriptMutant`: the script's source is
 * replaced while backends created inside load it). Each mutant must make
 * the scenario of daemon-queue.test.ts see the failure it exists to catch.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { QUEUE_APPEND, QUEUE_CLAIM } from '../../backend-redis/src/queue-scripts.js'
import { withScriptMutant } from '../../backend-redis/test/script-mutant.js'
import { BACKENDS, type BackendFactory, type BackendFixture } from './backends.js'
import { capacityExact, tokenPerClaim } from './daemon-queue-scenarios.js'
import { createOnPath } from './queue-paths.js'

const redis = BACKENDS.find((factory) => factory.name === 'redis') as BackendFactory
const createNative = createOnPath('native')

let fixture: BackendFixture
beforeEach(() => {
  fixture = redis.setup()
})
afterEach(async () => {
  await fixture.cleanup()
})

describe('native queue script mutants on redis', () => {
  it('an append that skips the capacity check stores past the capacity, which the check sees', async () => {
    const outcome = await withScriptMutant(
      {
        script: QUEUE_APPEND,
        from: 'local stored = math.min(tonumber(ARGV[2]) - (nxt - tonumber(head.head)), k)',
        to: 'local stored = k',
      },
      () => capacityExact(createNative, fixture),
    )
    // The check expects QUEUE_FULL twice and 2 queued.
    expect(outcome).toEqual({ single: 'resolved', batch: 'resolved', queued: 4 })
  })

  it('a claim that does not bump the fencing token hands one token out twice, which the check sees', async () => {
    const outcome = await withScriptMutant(
      {
        script: QUEUE_CLAIM,
        from: 'local token = math.max((tonumber(f[4]) or 0) + 1, now_us)',
        to: 'local token = tonumber(f[4]) or now_us',
      },
      () => tokenPerClaim(createNative, fixture),
    )
    // The check expects the second token to be larger.
    expect(outcome.second).toBe(outcome.first)
    expect(outcome.attempts).toEqual([1, 2])
  })
})
