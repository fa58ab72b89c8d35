import { EventEmitter } from 'node:events'
import {
  AgentStateError,
  isAgentStateError,
  type ListEntry,
  mapLimited,
  parseOptions,
  walkList,
} from '@agent-state/core'
import type { KeyvStoreAdapter, StoredData } from 'keyv'
import { createKeyLayout, type KeyLayout } from './key-layout.js'
import {
  type KeyvStoreOptions,
  keyvStoreOptionsSchema,
  type ResolvedKeyvStoreOptions,
} from './options.js'
import { decodeEnvelope, encodeEnvelope } from './value-envelope.js'

/** One entry of {@link AgentStateKeyvStore.setMany}. */
export interface KeyvEntryInput {
  readonly key: string
  readonly value: unknown
  readonly ttl?: number
}

/**
 * A Keyv 5 storage adapter over any agent-state `Backend`. Create it with
 * {@link createKeyvStore}; see the package README for guarantees and caveats.
 */
export class AgentStateKeyvStore extends EventEmitter implements KeyvStoreAdapter {
  /**
   * Adapter options as Keyv reads them. `dialect` is not one of Keyv's
   * hard-coded "iterable" dialects, so Keyv does not wire `keyv.iterator`
   * by itself; the README shows the one line that does.
   */
  readonly opts: { readonly dialect: 'agent-state'; readonly url: string }
  /** Set by Keyv to its namespace; selects the backend prefix. */
  namespace?: string | undefined
  private readonly settings: ResolvedKeyvStoreOptions
  private readonly layout: KeyLayout

  /** Use {@link createKeyvStore}. */
  constructor(settings: ResolvedKeyvStoreOptions) {
    super()
    this.settings = settings
    this.layout = createKeyLayout(settings.prefix)
    this.opts = { dialect: 'agent-state', url: `agent-state:${settings.prefix}` }
  }

  private backendKey(key: string): string {
    return this.layout.toBackendKey(key, this.namespace)
  }

  /**
   * The live value of a backend key, or `undefined` when it is missing or
   * expired. An expired entry is removed on the way, only if it is still the
   * version that was read (a concurrent rewrite survives).
   */
  private async readLive(backendKey: string): Promise<{ value: unknown } | undefined> {
    const stored = await this.settings.backend.get(backendKey)
    if (stored === null) return undefined
    const envelope = decodeEnvelope(stored.value, backendKey)
    if (envelope.expiresAt !== null && Date.now() > envelope.expiresAt) {
      await this.removeExpired(backendKey, stored.meta.version)
      return undefined
    }
    return { value: envelope.value }
  }

  private async removeExpired(backendKey: string, version: string): Promise<void> {
    try {
      await this.settings.backend.delete(backendKey, { ifMatch: version })
    } catch (error) {
      // Rewritten or deleted since the read: the newer state wins and stays.
      if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
    }
  }

  /** The value, or `undefined` when missing or expired. */
  async get<Value>(key: string): Promise<StoredData<Value> | undefined> {
    const live = await this.readLive(this.backendKey(key))
    return live?.value as StoredData<Value> | undefined
  }

  /** Values in the order of `keys`; `undefined` for a missing or expired key. */
  async getMany<Value>(keys: string[]): Promise<Array<StoredData<Value | undefined>>> {
    const found = await mapLimited(keys, this.settings.clearConcurrency, (key) =>
      this.readLive(this.backendKey(key)),
    )
    return found.map((live) => live?.value as StoredData<Value | undefined>)
  }

  /**
   * Stores `value`; with `ttl` (milliseconds, > 0) it expires then. A value
   * over the backend's `maxValueBytes` fails with `VALUE_TOO_LARGE`.
   */
  async set(key: string, value: unknown, ttl?: number): Promise<boolean> {
    const backendKey = this.backendKey(key)
    if (ttl !== undefined && ttl !== null && !(typeof ttl === 'number' && ttl >= 0)) {
      throw new AgentStateError('INVALID_ARGUMENT', 'ttl must be a number of milliseconds >= 0', {
        context: { key: backendKey },
      })
    }
    const expiresAt = typeof ttl === 'number' && ttl > 0 ? Date.now() + ttl : null
    await this.settings.backend.put(
      backendKey,
      encodeEnvelope(value, expiresAt),
      this.settings.writer === undefined ? {} : { writer: this.settings.writer },
    )
    return true
  }

  /** Stores every entry (concurrently, each on its own: not one transaction). */
  async setMany(values: KeyvEntryInput[]): Promise<void> {
    await mapLimited(values, this.settings.clearConcurrency, (entry) =>
      this.set(entry.key, entry.value, entry.ttl),
    )
  }

  /** Removes the key; resolves whether a value was stored (expired or not). */
  async delete(key: string): Promise<boolean> {
    return this.settings.backend.delete(this.backendKey(key))
  }

  /** Removes every key; resolves `true` only when every one of them held a value (as Keyv's own fallback). */
  async deleteMany(keys: string[]): Promise<boolean> {
    const removed = await mapLimited(keys, this.settings.clearConcurrency, (key) =>
      this.delete(key),
    )
    return removed.every(Boolean)
  }

  /** Whether the key holds a live (unexpired) value. */
  async has(key: string): Promise<boolean> {
    return (await this.readLive(this.backendKey(key))) !== undefined
  }

  /** {@link has} for each key, in order. */
  async hasMany(keys: string[]): Promise<boolean[]> {
    const found = await mapLimited(keys, this.settings.clearConcurrency, (key) =>
      this.readLive(this.backendKey(key)),
    )
    return found.map((live) => live !== undefined)
  }

  private async *pages(namespace: string | undefined): AsyncGenerator<readonly ListEntry[]> {
    const prefix = this.layout.namespacePrefix(namespace)
    for await (const page of walkList(this.settings.backend, { prefix })) yield page.entries
  }

  /**
   * Removes every key of this store's current namespace and nothing else
   * (other namespaces, other prefixes, other users of the backend stay).
   */
  async clear(): Promise<void> {
    // Collect first: deleting while paging is allowed by the contract, but a
    // full listing first keeps the page cursors away from concurrent deletes.
    const keys: string[] = []
    for await (const entries of this.pages(this.namespace)) {
      for (const entry of entries) keys.push(entry.key)
    }
    await mapLimited(keys, this.settings.clearConcurrency, (key) =>
      this.settings.backend.delete(key),
    )
  }

  /**
   * Every live `[key, value]` of `namespace` (default: the store's), keys
   * namespace-prefixed as Keyv passes them in, in the backend's byte order
   * of the encoded keys. Expired entries are skipped and removed.
   */
  async *iterator<Value>(namespace?: string): AsyncGenerator<[string, Value], void> {
    const scope = namespace ?? this.namespace
    for await (const entries of this.pages(scope)) {
      const values = await mapLimited(entries, this.settings.clearConcurrency, (entry) =>
        this.readLive(entry.key),
      )
      for (const [index, entry] of entries.entries()) {
        const live = values[index]
        if (live !== undefined) yield [this.layout.toKeyvKey(entry.key), live.value as Value]
      }
    }
  }
}

/**
 * Creates a Keyv 5 store over `options.backend`.
 *
 * @example
 * ```ts
 * const keyv = new Keyv({ store: createKeyvStore({ backend }), namespace: 'cache' })
 * await keyv.set('user:1', { name: 'Ada' }, 60_000)
 * ```
 */
export function createKeyvStore(options: KeyvStoreOptions): AgentStateKeyvStore {
  return new AgentStateKeyvStore(parseOptions(keyvStoreOptionsSchema, options, 'Keyv store'))
}
