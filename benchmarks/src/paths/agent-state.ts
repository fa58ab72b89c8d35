import type { Backend } from '@agent-state/core'
import { type BackendKind, forEachConcurrent, populatedKey, type Subject } from '../subject.js'

/** Holder name and TTL of the leases the lease workload takes. */
const LEASE_OPTIONS = { holder: 'bench', ttlMs: 60_000 } as const

/**
 * agent-state through the `Backend` interface only, exactly as an
 * application calls it: no writer identity (the cheapest put), versions from
 * the returned meta, leases through acquire/renew/release.
 */
export function agentStateSubject(
  backend: Backend,
  kind: BackendKind,
  options: {
    /**
     * Opens a second instance on the same storage for the listing population
     * only (setup, not measured): the fs backend with `fsync: false`, SQLite
     * with `synchronous: NORMAL`. Populating 100k keys durably takes minutes.
     */
    readonly populateWith?: () => Backend
  } = {},
): Subject {
  return {
    backend: kind,
    path: 'agent-state',
    label: `agent-state (${backend.name})`,
    notes: {},
    async put(key, value) {
      await backend.put(key, value)
    },
    async get(key) {
      return (await backend.get(key))?.value ?? null
    },
    async head(key) {
      return (await backend.head(key)) !== null
    },
    async delete(key) {
      await backend.delete(key)
    },
    async casInit(key, value) {
      return (await backend.put(key, value)).version
    },
    async cas(key, value, token) {
      return (await backend.put(key, value, { ifMatch: String(token) })).version
    },
    async create(key, value) {
      await backend.put(key, value, { ifNoneMatch: '*' })
    },
    async leaseCycle(key) {
      const lease = await backend.acquireLease(key, LEASE_OPTIONS)
      const renewed = await backend.renewLease(lease)
      if (!(await backend.releaseLease(renewed)))
        throw new Error(`lease on ${key} was not released`)
    },
    async listPage(prefix, limit, cursor) {
      const page = await backend.list(
        cursor === undefined ? { prefix, limit } : { prefix, limit, cursor },
      )
      const keys = page.entries.map((entry) => entry.key)
      return page.cursor === undefined ? { keys } : { keys, cursor: page.cursor }
    },
    async populate(prefix, count, value) {
      const writer = options.populateWith?.() ?? backend
      try {
        await forEachConcurrent(count, 64, (index) =>
          writer.put(populatedKey(prefix, index), value),
        )
      } finally {
        if (writer !== backend) await writer.close()
      }
    },
    async close() {
      await backend.close()
    },
  }
}
