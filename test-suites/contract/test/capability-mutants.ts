import { fileURLToPath } from 'node:url'
import {
  type Backend,
  type Capabilities,
  createRecordBackend,
  type RecordStore,
} from '@agent-state/core'
import {
  createMemoryBackend,
  createMemoryRecordMap,
  createMemoryRecordStore,
  createMemoryStore,
} from '@agent-state/memory'
import type { ContractOptions } from '../src/index.js'

/**
 * The four capability survivors of the Stryker run (mutation-testing.md):
 * `durable` or `multiProcess` forced `true` in the memory backend
 * (memory-backend.ts) and in the memory record store
 * (memory-record-store.ts). Each mutant is contract options whose instances
 * claim the capability; `process` is the memory child module, as in the
 * memory suites, so the tiers that a claim requires can run and disprove it.
 */

const childModule = fileURLToPath(new URL('./memory-backend-child.ts', import.meta.url))

/** Which capability a mutant forces `true`, and in which memory backend. */
export interface CapabilityMutant {
  readonly capability: 'durable' | 'multiProcess'
  readonly backend: 'memory' | 'memory-records'
}

/** The mutants, by name. */
export const CAPABILITY_MUTANTS: Record<string, CapabilityMutant> = {
  // memory-backend.ts `durable: false` → `true`.
  'the memory backend claims durable': { capability: 'durable', backend: 'memory' },
  // memory-backend.ts `multiProcess: false` → `true`.
  'the memory backend claims multiProcess': { capability: 'multiProcess', backend: 'memory' },
  // memory-record-store.ts `durable: false` → `true`.
  'the memory record store claims durable': { capability: 'durable', backend: 'memory-records' },
  // memory-record-store.ts `multiProcess: false` → `true`.
  'the memory record store claims multiProcess': {
    capability: 'multiProcess',
    backend: 'memory-records',
  },
}

function claiming<T extends Omit<Capabilities, 'leaseClock'>>(
  capabilities: T,
  capability: CapabilityMutant['capability'],
): T {
  return { ...capabilities, [capability]: true }
}

/**
 * The mutant's backend: its instances claim the capability, from the first one on
 * (`claimAfter` 0), or only from instance `claimAfter` on, as under Stryker, where the suite
 * probes the capabilities while vitest collects tests, before the mutant is switched on.
 */
export function mutantOptions(
  name: string,
  options: { withProcess?: boolean; claimAfter?: number; processes?: number } = {},
): ContractOptions {
  const mutant = CAPABILITY_MUTANTS[name]
  if (mutant === undefined) throw new Error(`no capability mutant ${name}`)
  const claimAfter = options.claimAfter ?? 0
  let created = 0
  const memoryStore = createMemoryStore()
  const maps = new Map<string, ReturnType<typeof createMemoryRecordMap>>()
  const create = (ctx: { namespace: string; clock: () => number }): Backend => {
    const claims = created++ >= claimAfter
    if (mutant.backend === 'memory') {
      const inner = createMemoryBackend({
        store: memoryStore,
        namespace: ctx.namespace,
        clock: ctx.clock,
      })
      return claims
        ? { ...inner, capabilities: claiming(inner.capabilities, mutant.capability) }
        : inner
    }
    let records = maps.get(ctx.namespace)
    if (records === undefined) {
      records = createMemoryRecordMap()
      maps.set(ctx.namespace, records)
    }
    const store = createMemoryRecordStore({ records })
    const mutated: RecordStore = claims
      ? { ...store, capabilities: claiming(store.capabilities, mutant.capability) }
      : store
    return createRecordBackend(mutated, { clock: ctx.clock })
  }
  return {
    name: `mutant: ${name}`,
    create,
    ...(options.withProcess === false
      ? {}
      : {
          process: {
            module: childModule,
            ...(mutant.backend === 'memory-records' ? { options: { records: true } } : {}),
          },
        }),
    ...(options.processes === undefined ? {} : { scale: { processes: options.processes } }),
  }
}
