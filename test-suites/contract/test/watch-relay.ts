import {
  AgentStateError,
  assertWatchPrefix,
  type Backend,
  type ChangeHint,
  createWatchSet,
  failedWatch,
  type WatchSet,
} from '@agent-state/core'
import { createMemoryBackend, type MemoryStore } from '@agent-state/memory'
import type { ContractContext } from '../src/index.js'

/**
 * A memory backend whose hints travel over a relay each watching instance is
 * "connected" to, the way a Redis subscriber connection carries them: the
 * change-notification tier's interrupt check needs a channel that can be
 * lost. The correct relay resyncs every stream when it reconnects; each
 * mutation breaks one rule of the contract, and the watch mutant tests prove
 * the tier catches every one.
 */
export type RelayMutation =
  | 'none'
  | 'no resync after a reconnect'
  | 'drops the hint of the last write of a burst'
  | 'hints before the write is durable'
  | 'leaks its watch handle'

interface Subscriber {
  connected: boolean
  readonly watches: WatchSet
  /** Last hint time per key (the dropping mutant's naive rate limit). */
  readonly lastHint: Map<string, number>
}

const buses = new WeakMap<MemoryStore, Map<string, Set<Subscriber>>>()
const interrupters = new WeakMap<Backend, () => Promise<void>>()

function subscribersOf(store: MemoryStore, namespace: string): Set<Subscriber> {
  let byNamespace = buses.get(store)
  if (byNamespace === undefined) {
    byNamespace = new Map()
    buses.set(store, byNamespace)
  }
  let set = byNamespace.get(namespace)
  if (set === undefined) {
    set = new Set()
    byNamespace.set(namespace, set)
  }
  return set
}

/** Interrupts the relay of a relayed instance (the tier's `watchInterrupt`). */
export async function interruptRelay(backend: Backend): Promise<void> {
  const interrupt = interrupters.get(backend)
  if (interrupt === undefined) throw new Error('not a relayed backend')
  await interrupt()
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The relayed memory backend, with one rule broken by `mutation`. */
export function relayBackend(
  store: MemoryStore,
  mutation: RelayMutation,
): (ctx: ContractContext) => Backend {
  return (ctx) => {
    const inner = createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock })
    const subscribers = subscribersOf(store, ctx.namespace)
    const me: Subscriber = { connected: true, watches: createWatchSet(), lastHint: new Map() }
    let closed = false

    function publish(key: string): void {
      for (const sub of subscribers) {
        if (!sub.connected) continue
        if (mutation === 'drops the hint of the last write of a burst') {
          const last = sub.lastHint.get(key) ?? 0
          const now = performance.now()
          if (now - last < 50) continue
          sub.lastHint.set(key, now)
        }
        sub.watches.key(key)
      }
    }

    async function announced<T>(key: string, write: () => Promise<T>): Promise<T> {
      if (mutation === 'hints before the write is durable') {
        publish(key)
        await sleep(5)
        return write()
      }
      const result = await write()
      publish(key)
      return result
    }

    const backend: Backend = {
      ...inner,
      capabilities: {
        ...inner.capabilities,
        changeNotification: { mode: 'push', maxDelayMs: 200 },
      },
      put: (key, value, options) => announced(key, () => inner.put(key, value, options)),
      delete: (key, options) => announced(key, () => inner.delete(key, options)),
      watch(prefix, options): AsyncIterable<ChangeHint> {
        try {
          if (closed) throw new AgentStateError('CLOSED', 'Backend relay is closed')
          assertWatchPrefix(prefix)
        } catch (error) {
          return failedWatch(error)
        }
        // The leaking mutant keeps a timer per watch that nothing clears.
        const leak = mutation === 'leaks its watch handle' ? setInterval(() => {}, 1000) : undefined
        const stream = me.watches.open(prefix, {
          signal: options?.signal,
          onEnd() {
            if (mutation !== 'leaks its watch handle') clearInterval(leak)
            if (me.watches.size === 0) subscribers.delete(me)
          },
        })
        if (stream.ended) return stream
        subscribers.add(me)
        stream.resync()
        return stream
      },
      async close() {
        closed = true
        me.watches.endAll()
        subscribers.delete(me)
        await inner.close()
      },
    }
    // As a killed connection: cut at once, reconnected by the backend itself a little later.
    interrupters.set(backend, async () => {
      me.connected = false
      setTimeout(() => {
        me.connected = true
        if (mutation !== 'no resync after a reconnect') me.watches.resync()
      }, 30)
    })
    return backend
  }
}
