import { randomBytes } from 'node:crypto'
import {
  type Backend,
  type Capabilities,
  type Clock,
  createManualClock,
  isAgentStateError,
  type Lease,
  type ManualClock,
  systemClock,
  watchInterruptOf,
} from '@agent-state/core'
import { fail } from './assert.js'
import { type ContractChild, spawnContractChild } from './child-process.js'
import { resolveScale, resolveSeed } from './knobs.js'
import type {
  CheckScale,
  ContractOptions,
  ContractProcessOptions,
  ContractScale,
  FrozenWriterLimitation,
  WatchInterrupt,
} from './types.js'

/**
 * What every check receives: a fresh namespace, a manual clock, a factory of
 * instances on the shared storage, and helpers that make lease expiry work on
 * every declared lease clock. A harness serves one check; `cleanup` destroys
 * the namespace and closes every instance it created.
 */
export interface Harness {
  readonly name: string
  readonly namespace: string
  /** The manual clock given to instances created without `realClock`. */
  readonly clock: ManualClock
  readonly capabilities: Capabilities
  readonly scale: Required<ContractScale>
  readonly seed: number
  readonly process: ContractProcessOptions | undefined
  /**
   * A new instance on the shared storage, in this harness's namespace. Fails
   * (a contract verdict) when the instance declares other capabilities than
   * the ones the harness was created with.
   */
  backend(options?: { realClock?: boolean }): Promise<Backend>
  /** A TTL that does not run out during a check (a manual clock only moves when told to). */
  readonly leaseTtlMs: number
  /** A TTL for checks that wait for expiry: as `leaseTtlMs` on a manual clock, 300 ms on real time. */
  readonly shortLeaseTtlMs: number
  /**
   * Acquires after a previous lease expired. On real-time clocks it retries on
   * `LEASE_HELD` until a generous deadline, since an `observer` contender only
   * judges expiry after watching the lease unchanged for its TTL.
   */
  acquireAfterExpiry(backend: Backend, key: string, holder: string, ttlMs: number): Promise<Lease>
  /** Makes `lease` expire: advances the manual clock (host clock) or waits real time. */
  expire(lease: Lease): Promise<void>
  /**
   * Spawns a child process with its own instance in this namespace. Rejects
   * when no `process` option was given: a check that needs children only runs
   * for a backend that claims `multiProcess` or `durable` (or, for the
   * change-notification release check, a watch), so a missing option is an
   * unproved claim, a failure.
   */
  child(options?: { stepped?: boolean }): Promise<ContractChild>
  /** How the change-notification tier interrupts a watch (see `WatchInterrupt`). */
  readonly watchInterrupt: WatchInterrupt | undefined
  /** The backend's declared frozen-writer limitation, if any. */
  readonly frozenWriterLimitation: FrozenWriterLimitation | undefined
  /**
   * Records that the check verified a limitation the backend declared: the
   * summary then shows the check as `limitation`, not `passed`.
   */
  declareLimitation(text: string): void
  /** What {@link declareLimitation} recorded. */
  readonly limitation: string | undefined
  /** Records the scale the check ran at (merged; shown in the summary and the JSON). */
  report(scale: CheckScale): void
  /** What {@link report} collected so far. */
  readonly reported: CheckScale
  /** Destroys the namespace (if the backend can) and closes every instance. */
  cleanup(): Promise<void>
}

/**
 * Capabilities as text with sorted keys at every level (a getter is read), so
 * two declarations compare equal exactly when they claim the same.
 */
export function capabilityText(capabilities: Capabilities): string {
  const sorted = (value: unknown): unknown =>
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((key) => [key, sorted((value as Record<string, unknown>)[key])]),
        )
      : value
  return JSON.stringify(sorted(capabilities))
}

/** A fresh unique namespace, `t-<random>`. */
export function freshNamespace(): string {
  return `t-${randomBytes(8).toString('hex')}`
}

/** Real-time lease TTL for `server` / `observer` clocks. */
const REAL_TTL_MS = 300

/** Sleeps `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/**
 * Creates the harness of one check. `capabilities` comes from a probe
 * instance created once per suite (see `probeCapabilities`).
 */
export function createHarness(options: ContractOptions, capabilities: Capabilities): Harness {
  const namespace = freshNamespace()
  const clock = createManualClock()
  const instances: Backend[] = []
  const spawning: Array<Promise<ContractChild>> = []
  const hostClock = capabilities.leaseClock === 'host'
  const reported: Record<string, number> = {}
  let limitation: string | undefined

  const planned = capabilityText(capabilities)

  async function backend(opts: { realClock?: boolean } = {}): Promise<Backend> {
    const useClock: Clock = opts.realClock === true ? systemClock : clock.now
    const created = await options.create({ namespace, clock: useClock })
    instances.push(created)
    // The suite chose which checks run from the probe instance's claims (see
    // probeCapabilities): an instance claiming anything else would be judged by a plan that
    // skipped, or ran, the wrong tiers.
    const declared = capabilityText(created.capabilities)
    if (declared !== planned) {
      fail(
        `an instance declares capabilities ${declared}, but the suite planned its checks from the probe instance's ${planned}: every instance of a backend must declare the same capabilities`,
      )
    }
    return created
  }

  return {
    name: options.name,
    namespace,
    clock,
    capabilities,
    scale: resolveScale(options.scale),
    seed: resolveSeed(options.seed),
    process: options.process,
    backend,
    leaseTtlMs: hostClock ? 60_000 : 15_000,
    shortLeaseTtlMs: hostClock ? 60_000 : REAL_TTL_MS,
    async acquireAfterExpiry(b, key, holder, ttlMs) {
      const deadline = hostClock ? 0 : Date.now() + 4 * REAL_TTL_MS + 3000
      for (;;) {
        try {
          return await b.acquireLease(key, { holder, ttlMs })
        } catch (error) {
          if (!isAgentStateError(error, 'LEASE_HELD')) throw error
          if (Date.now() > deadline) {
            fail(`acquire of ${JSON.stringify(key)} after its lease expired: still LEASE_HELD`)
          }
          await sleep(25)
        }
      }
    },
    async expire(lease) {
      if (hostClock) {
        const target = lease.expiresAt + 1
        if (target > clock.now()) clock.set(target)
        return
      }
      // Real time: wait out the TTL with a generous margin for clock skew and observers.
      await sleep(lease.ttlMs + 100)
    },
    report(scale) {
      Object.assign(reported, scale)
    },
    reported,
    frozenWriterLimitation: options.frozenWriterLimitation,
    watchInterrupt: options.watchInterrupt,
    declareLimitation(text) {
      limitation = text
    },
    get limitation() {
      return limitation
    },
    async child(childOptions = {}) {
      if (options.process === undefined) {
        throw new Error(
          `the backend claims ${capabilities.multiProcess ? 'multiProcess' : capabilities.durable ? 'durable' : 'changeNotification'} but no \`process\` option (child backend module) was given: a claimed capability must be proved, so this tier fails instead of being skipped`,
        )
      }
      const spawned = spawnContractChild(options.process, namespace, childOptions.stepped === true)
      spawning.push(spawned)
      return spawned
    },
    async cleanup() {
      const errors: unknown[] = []
      // Wait for children still starting too, so none outlives the check.
      for (const settled of await Promise.allSettled(spawning)) {
        if (settled.status === 'fulfilled') {
          await settled.value.stop().catch((error: unknown) => errors.push(error))
        }
      }
      try {
        const last = await backend()
        await last.destroy?.()
      } catch (error) {
        errors.push(error)
      }
      for (const instance of instances) {
        try {
          await instance.close()
        } catch (error) {
          errors.push(error)
        }
      }
      if (errors.length > 0) throw errors[0]
    },
  }
}

/**
 * What the probe instance carried under core's `WATCH_INTERRUPT` seam, by the
 * capabilities object `probeCapabilities` returned: `'function'`, the
 * not-applicable reason, or absent.
 */
const interruptSeams = new WeakMap<Capabilities, 'function' | string>()

/** The probe's watch-interrupt seam kind for capabilities from {@link probeCapabilities}. */
export function probedInterruptSeam(capabilities: Capabilities): 'function' | string | undefined {
  return interruptSeams.get(capabilities)
}

const destroyOffered = new WeakSet<Capabilities>()

/**
 * Whether the probe instance behind capabilities from {@link probeCapabilities} has the optional
 * `destroy`: the destroy check is skipped as not applicable without it, never passed vacuously.
 */
export function probedDestroy(capabilities: Capabilities): boolean {
  return destroyOffered.has(capabilities)
}

/** Creates one instance to read the declared capabilities, then closes it. */
export async function probeCapabilities(options: ContractOptions): Promise<Capabilities> {
  const probe = await options.create({ namespace: freshNamespace(), clock: systemClock })
  try {
    const capabilities = { ...probe.capabilities }
    const seam = watchInterruptOf(probe)
    if (seam !== undefined) {
      interruptSeams.set(capabilities, typeof seam === 'function' ? 'function' : seam)
    }
    if (typeof probe.destroy === 'function') destroyOffered.add(capabilities)
    return capabilities
  } finally {
    await probe.close()
  }
}
