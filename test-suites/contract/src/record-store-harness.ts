import { AssertionError } from 'node:assert'
import { randomBytes } from 'node:crypto'
import { isAgentStateError, type RecordStore } from '@agent-state/core'

/** What `create` of {@link RecordStoreContractOptions} is given. */
export interface RecordStoreContext {
  /**
   * The namespace the store must serve (`t-<16 hex>`). Stores created with
   * the same namespace must share records; with different ones, never.
   */
  readonly namespace: string
}

/** Options of `describeRecordStoreContract`. */
export interface RecordStoreContractOptions {
  /** Shown in test titles. */
  readonly name: string
  /** A new store instance on the same underlying storage; called many times per check. */
  readonly create: (ctx: RecordStoreContext) => RecordStore | Promise<RecordStore>
}

/** What a record-store check works with. */
export interface RecordStoreHarness {
  /** The namespace of this check. */
  readonly namespace: string
  /** A new store on this check's namespace. */
  store(): Promise<RecordStore>
  /** A new store on another fresh namespace (cleaned up too), and that namespace. */
  otherNamespace(): Promise<{ namespace: string; store: () => Promise<RecordStore> }>
  /** Destroys every namespace used (when the store can) and closes every store. */
  cleanup(): Promise<void>
}

/** The `RecordStore` methods a failure can name. */
export type RecordStoreMethod = 'read' | 'write' | 'scan' | 'remove' | 'destroy' | 'capabilities'

/** Fails naming the method at fault: `RecordStore.scan: …`. */
export function storeFail(method: RecordStoreMethod, message: string): never {
  throw new AssertionError({ message: `RecordStore.${method}: ${message}` })
}

/** Fails naming the method unless `condition` holds. */
export function storeEnsure(
  method: RecordStoreMethod,
  condition: unknown,
  message: string,
): asserts condition {
  if (!condition) storeFail(method, message)
}

/**
 * Awaits a `write` that must fail its condition: `PRECONDITION_FAILED`, as an
 * `AgentStateError`, and nothing else (core retries on exactly that code).
 */
export async function writeRefused(promise: Promise<string>, what: string): Promise<void> {
  let version: string
  try {
    version = await promise
  } catch (error) {
    if (isAgentStateError(error, 'PRECONDITION_FAILED')) return
    const got = isAgentStateError(error)
      ? `AgentStateError ${error.code}`
      : `a raw error (${String(error)}); a store must throw AgentStateErrors`
    storeFail('write', `${what}: expected PRECONDITION_FAILED, got ${got}`)
  }
  storeFail('write', `${what}: expected PRECONDITION_FAILED, but it wrote version ${version}`)
}

/** Awaits a store call that must succeed, naming the method when it throws. */
export async function storeCall<T>(
  method: RecordStoreMethod,
  promise: Promise<T>,
  what: string,
): Promise<T> {
  try {
    return await promise
  } catch (error) {
    const got = isAgentStateError(error) ? `AgentStateError ${error.code}` : String(error)
    storeFail(method, `${what}: expected success, got ${got}`)
  }
}

function freshNamespace(): string {
  return `t-${randomBytes(8).toString('hex')}`
}

/** A harness for one check: a fresh namespace, stores on demand, cleanup of both. */
export function createRecordStoreHarness(options: RecordStoreContractOptions): RecordStoreHarness {
  const created: RecordStore[] = []
  const namespaces = new Set<string>()
  const open = async (namespace: string) => {
    namespaces.add(namespace)
    const store = await options.create({ namespace })
    created.push(store)
    return store
  }
  const namespace = freshNamespace()
  return {
    namespace,
    store: () => open(namespace),
    async otherNamespace() {
      const other = freshNamespace()
      return { namespace: other, store: () => open(other) }
    },
    async cleanup() {
      let failure: unknown
      for (const used of namespaces) {
        try {
          const store = await open(used)
          await store.destroy?.()
        } catch (error) {
          failure ??= error
        }
      }
      for (const store of created) {
        try {
          await store.close()
        } catch (error) {
          failure ??= error
        }
      }
      if (failure !== undefined) throw failure
    },
  }
}
