import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import { watchOf } from './watch-of.js'

/** One call the wrapped backend saw, with how it ended. */
export interface RecordedCall {
  readonly op: 'put' | 'renewLease'
  readonly key: string
  /** The fencing token of the lease the call carried, or `null`. */
  readonly token: number | null
  /** `'ok'` or the error code. */
  readonly outcome: string
}

/** A backend that records its `put` and `renewLease` calls, to prove which step refused. */
export interface RecordingBackend extends Backend {
  readonly calls: RecordedCall[]
}

async function record<T>(
  calls: RecordedCall[],
  call: Omit<RecordedCall, 'outcome'>,
  run: () => Promise<T>,
): Promise<T> {
  try {
    const result = await run()
    calls.push({ ...call, outcome: 'ok' })
    return result
  } catch (error) {
    calls.push({ ...call, outcome: isAgentStateError(error) ? error.code : String(error) })
    throw error
  }
}

/** Wraps `inner`, recording puts and renewals; everything else is delegated as is. */
export function withRecording(inner: Backend): RecordingBackend {
  const calls: RecordedCall[] = []
  return {
    contractVersion: inner.contractVersion,
    name: `${inner.name}+recording`,
    capabilities: inner.capabilities,
    calls,
    get: (key) => inner.get(key),
    head: (key) => inner.head(key),
    put: (key, value, options) =>
      record(calls, { op: 'put', key, token: options?.lease?.token ?? null }, () =>
        inner.put(key, value, options),
      ),
    delete: (key, options) => inner.delete(key, options),
    list: (options) => inner.list(options),
    acquireLease: (key, options) => inner.acquireLease(key, options),
    renewLease: (lease) =>
      record(calls, { op: 'renewLease', key: lease.key, token: lease.token }, () =>
        inner.renewLease(lease),
      ),
    releaseLease: (lease) => inner.releaseLease(lease),
    getLease: (key) => inner.getLease(key),
    ...watchOf(inner),
    close: () => inner.close(),
  }
}

/**
 * A backend whose lease clock is `skewMs` away from the local clock, as a
 * storage server with its own clock (Redis `TIME`) may be: every lease it
 * hands out says `expiresAt` on that clock. Leases passed back are
 * translated to the inner backend's clock, so fencing is unaffected.
 */
export function withSkewedLeaseClock(
  inner: Backend,
  skewMs: number,
): Backend & { renewals: number } {
  const out = (lease: Lease): Lease => ({ ...lease, expiresAt: lease.expiresAt + skewMs })
  const back = (lease: Lease): Lease => ({ ...lease, expiresAt: lease.expiresAt - skewMs })
  const wrapper = {
    contractVersion: inner.contractVersion,
    name: `${inner.name}+skewed-clock`,
    capabilities: { ...inner.capabilities, leaseClock: 'server' as const },
    renewals: 0,
    get: (key: string) => inner.get(key),
    head: (key: string) => inner.head(key),
    put: (...[key, value, options]: Parameters<Backend['put']>) =>
      inner.put(
        key,
        value,
        options?.lease === undefined ? options : { ...options, lease: back(options.lease) },
      ),
    delete: (...[key, options]: Parameters<Backend['delete']>) =>
      inner.delete(
        key,
        options?.lease === undefined ? options : { ...options, lease: back(options.lease) },
      ),
    list: (options: Parameters<Backend['list']>[0]) => inner.list(options),
    acquireLease: async (...[key, options]: Parameters<Backend['acquireLease']>) =>
      out(await inner.acquireLease(key, options)),
    renewLease: async (lease: Lease) => {
      wrapper.renewals++
      return out(await inner.renewLease(back(lease)))
    },
    releaseLease: (lease: Lease) => inner.releaseLease(back(lease)),
    getLease: async (key: string) => {
      const lease = await inner.getLease(key)
      return lease === null ? null : out(lease)
    },
    ...watchOf(inner),
    close: () => inner.close(),
  }
  return wrapper
}
