import type { Backend } from '@agent-state/core'
import type { RunnableConfig } from '@langchain/core/runnables'
import { type Checkpoint, emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint'
import type { AgentStateSaver } from '../src/index.js'

/** A wrapper of one backend method: gets the call's arguments and the real call. */
export type AroundCall = (args: unknown[], call: () => Promise<unknown>) => Promise<unknown>

/** `backend` with every call of the methods in `around` passed through its wrapper; the rest unchanged. */
export function wrapCalls(
  backend: Backend,
  around: Partial<Record<'get' | 'getMany' | 'list', AroundCall>>,
): Backend {
  return new Proxy(backend, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      const wrapper = around[property as 'get' | 'getMany' | 'list']
      const method = (value as (...args: unknown[]) => Promise<unknown>).bind(target)
      if (wrapper === undefined) return method
      return (...args: unknown[]) => wrapper(args, () => method(...args))
    },
  })
}

/**
 * The real backend, with every key passed to `get` recorded, and each key of a native
 * `getMany` (PostgreSQL's) in its order (no behaviour changed).
 */
export function recordingGets(backend: Backend): { backend: Backend; gets: string[] } {
  const gets: string[] = []
  const wrapped = wrapCalls(backend, {
    get: (args, call) => {
      gets.push(args[0] as string)
      return call()
    },
    getMany: (args, call) => {
      gets.push(...(args[0] as string[]))
      return call()
    },
  })
  return { backend: wrapped, gets }
}

/** Every key under `prefix` on the backend, all pages. */
export async function allKeys(backend: Backend, prefix: string): Promise<string[]> {
  const keys: string[] = []
  let cursor: string | undefined
  do {
    const page = await backend.list(cursor === undefined ? { prefix } : { prefix, cursor })
    keys.push(...page.entries.map((entry) => entry.key))
    cursor = page.cursor
  } while (cursor !== undefined)
  return keys
}

/**
 * Puts a chain of checkpoints as a graph run would: channel `counter`
 * changes every step, channel `constant` only at the first, so later
 * checkpoints share its blob; each checkpoint gets one pending write.
 */
export async function putChain(
  saver: AgentStateSaver,
  threadId: string,
  length: number,
  options: { ns?: string; from?: RunnableConfig; label?: string } = {},
): Promise<RunnableConfig[]> {
  const ns = options.ns ?? ''
  let config: RunnableConfig = options.from ?? {
    configurable: { thread_id: threadId, checkpoint_ns: ns },
  }
  let versions: Record<string, number> = {}
  if (options.from !== undefined) {
    const tuple = await saver.getTuple(options.from)
    versions = { ...(tuple?.checkpoint.channel_versions as Record<string, number>) }
  }
  const configs: RunnableConfig[] = []
  for (let step = 0; step < length; step++) {
    const newVersions: Record<string, number> = { counter: saver.getNextVersion(versions.counter) }
    if (versions.constant === undefined) newVersions.constant = saver.getNextVersion(undefined)
    versions = { ...versions, ...newVersions }
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-3),
      channel_values: { counter: `${options.label ?? 'main'}-${step}`, constant: 'same' },
      channel_versions: { ...versions },
    }
    config = await saver.put(config, checkpoint, { source: 'loop', step, parents: {} }, newVersions)
    await saver.putWrites(config, [['counter', `write-${step}`]], `task-${step}`, '~step')
    configs.push(config)
  }
  return configs
}
