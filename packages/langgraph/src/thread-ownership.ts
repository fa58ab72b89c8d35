import { performance } from 'node:perf_hooks'
import {
  AgentStateError,
  type Backend,
  isAgentStateError,
  type Lease,
  quoteForMessage,
} from '@agent-state/core'
import type { KeyLayout } from './key-layout.js'
import type { OwnerStamp } from './records.js'

/**
 * The committed sequence number of every owner epoch of a thread, by fencing
 * token. A record stamped `[token, seq]` is committed iff
 * `epochs[token] >= seq`: a stale owner's records, written after it lost the
 * thread, carry a sequence number its epoch never reached, so readers skip them.
 */
export type Epochs = Readonly<Record<string, number>>

interface Owned {
  lease: Lease
  /** `performance.now()` when the lease was last acquired or renewed (local monotonic clock). */
  since: number
  headVersion: string
  epochs: Epochs
  seq: number
}

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

function encodeHead(epochs: Epochs): Uint8Array {
  return encoder.encode(JSON.stringify({ v: 1, epochs }))
}

/** Decodes a thread head; anything else is `CORRUPT`. */
export function decodeHead(bytes: Uint8Array, key: string): Epochs {
  try {
    const parsed = JSON.parse(decoder.decode(bytes)) as { v?: unknown; epochs?: unknown }
    const epochs = parsed.epochs
    if (
      parsed.v === 1 &&
      typeof epochs === 'object' &&
      epochs !== null &&
      Object.values(epochs).every((seq) => Number.isSafeInteger(seq))
    ) {
      return epochs as Epochs
    }
  } catch (error) {
    throw new AgentStateError('CORRUPT', 'A LangGraph thread head is damaged', {
      context: { key },
      cause: error,
    })
  }
  throw new AgentStateError('CORRUPT', 'A LangGraph thread head is damaged', { context: { key } })
}

/** Whether a stamped record is committed under `epochs`; unstamped records always are. */
export function isCommitted(stamp: OwnerStamp | undefined, epochs: Epochs | undefined): boolean {
  if (stamp === undefined) return true
  const committed = epochs?.[String(stamp[0])]
  return committed !== undefined && committed >= stamp[1]
}

/** The error a writer gets once another writer owns the thread. */
function staleWriter(threadId: string, token: number, cause: unknown): AgentStateError {
  return new AgentStateError(
    'LEASE_LOST',
    `This saver lost ownership of LangGraph thread ${quoteForMessage(threadId)}: its lease expired, and another writer may have taken the thread over. Nothing of this write was committed; reload the thread (getTuple) before continuing.`,
    { context: { threadId, token }, cause },
  )
}

/**
 * Thread ownership: the writer holds the lease on the thread's head key, and
 * every `put`/`putWrites` ends with a fenced compare-and-set of the head that
 * commits its records (records first, then the head). A writer frozen at any
 * point and woken after another took the thread gets `LEASE_LOST` from that
 * fenced write, and its records stay invisible (see {@link isCommitted}).
 * On a backend that claims `crossKeyFence`, a write of one record is instead
 * fenced by the head's lease itself (see {@link ThreadOwnership.writeFenced}):
 * one write, no head commit.
 */
export class ThreadOwnership {
  private readonly owned = new Map<string, Owned>()
  private readonly queues = new Map<string, Promise<unknown>>()

  constructor(
    private readonly backend: Backend,
    private readonly layout: KeyLayout,
    private readonly holder: string,
    private readonly ttlMs: number,
  ) {}

  /** Runs `work` after every earlier write of this thread in this process (one commit at a time). */
  serialize<T>(threadId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(threadId) ?? Promise.resolve()
    const next = previous.then(work, work)
    const settled = next.then(
      () => undefined,
      () => undefined,
    )
    this.queues.set(threadId, settled)
    void settled.then(() => {
      if (this.queues.get(threadId) === settled) this.queues.delete(threadId)
    })
    return next
  }

  /**
   * Takes (or keeps, renewing when half its time is gone) the thread; returns
   * the stamp of the next write. A lease that expired while idle is taken
   * again if nobody else took the thread meanwhile (see {@link resume}).
   */
  async begin(threadId: string): Promise<OwnerStamp> {
    const state = await this.hold(threadId)
    return [state.lease.token, state.seq + 1]
  }

  /** {@link begin}'s taking or keeping of the thread; resolves its state. */
  private async hold(threadId: string): Promise<Owned> {
    let state = this.owned.get(threadId)
    if (state === undefined) state = await this.acquire(threadId)
    else if (!this.surelyLive(state)) {
      try {
        state.lease = await this.backend.renewLease(state.lease)
        state.since = performance.now()
      } catch (error) {
        if (!isAgentStateError(error, 'LEASE_LOST')) throw error
        state = await this.resumeOrLose(threadId, state, undefined, error)
      }
    }
    return state
  }

  /**
   * After this saver's lease expired: takes the thread's lease again and
   * keeps going only if the head is still the version this saver last wrote.
   * Every acquisition writes the head, so an unchanged head proves nobody else
   * owned the thread in between, and nothing can have forked. `pending`
   * (records stamped under the old lease, written but not committed) is
   * committed in the same head write. Resolves `undefined` when another
   * writer holds or held the thread.
   */
  private async resume(
    threadId: string,
    state: Owned,
    pending: OwnerStamp | undefined,
  ): Promise<Owned | undefined> {
    const key = this.layout.owner(threadId)
    let lease: Lease
    try {
      lease = await this.backend.acquireLease(key, { holder: this.holder, ttlMs: this.ttlMs })
    } catch (error) {
      if (isAgentStateError(error, 'LEASE_HELD')) return undefined
      throw error
    }
    const since = performance.now()
    const current = await this.backend.head(key)
    if (current?.version !== state.headVersion) {
      await this.backend.releaseLease(lease).catch(() => false)
      return undefined
    }
    const epochs = {
      ...state.epochs,
      ...(pending === undefined ? {} : { [pending[0]]: pending[1] }),
      [lease.token]: 0,
    }
    try {
      const meta = await this.backend.put(key, encodeHead(epochs), {
        lease,
        ifMatch: state.headVersion,
        writer: { writerId: this.holder },
      })
      const resumed: Owned = { lease, since, headVersion: meta.version, epochs, seq: 0 }
      this.owned.set(threadId, resumed)
      return resumed
    } catch (error) {
      await this.backend.releaseLease(lease).catch(() => false)
      if (isAgentStateError(error, 'PRECONDITION_FAILED')) return undefined
      throw error
    }
  }

  /**
   * {@link resume} after `error` (the lease found stale), or the thread is
   * lost: forgotten, and `LEASE_LOST` thrown with `error` as its cause.
   */
  private async resumeOrLose(
    threadId: string,
    state: Owned,
    pending: OwnerStamp | undefined,
    error: unknown,
  ): Promise<Owned> {
    const resumed = await this.resume(threadId, state, pending)
    if (resumed !== undefined) return resumed
    this.owned.delete(threadId)
    throw staleWriter(threadId, state.lease.token, error)
  }

  private async acquire(threadId: string): Promise<Owned> {
    const key = this.layout.owner(threadId)
    let lease: Lease
    try {
      lease = await this.backend.acquireLease(key, { holder: this.holder, ttlMs: this.ttlMs })
    } catch (error) {
      if (!isAgentStateError(error, 'LEASE_HELD')) throw error
      throw new AgentStateError(
        'LEASE_HELD',
        `LangGraph thread ${quoteForMessage(threadId)} is owned by another writer`,
        { context: { threadId, holder: error.context.holder ?? null }, cause: error },
      )
    }
    const since = performance.now()
    try {
      const current = await this.backend.get(key)
      const known = current === null ? {} : decodeHead(current.value, key)
      const epochs = { ...known, [lease.token]: 0 }
      const meta = await this.backend.put(
        key,
        encodeHead(epochs),
        current === null
          ? { lease, ifNoneMatch: '*', writer: { writerId: this.holder } }
          : { lease, ifMatch: current.meta.version, writer: { writerId: this.holder } },
      )
      const state: Owned = { lease, since, headVersion: meta.version, epochs, seq: 0 }
      this.owned.set(threadId, state)
      return state
    } catch (error) {
      // Not owned after all (a damaged head, a concurrent deleteThread): let others take it.
      await this.backend.releaseLease(lease).catch(() => false)
      throw error
    }
  }

  /**
   * Writes one record fenced by the thread's lease (`PutOptions.fence`, on a
   * backend that claims `crossKeyFence`), with no head write: the fence makes
   * a stale owner's write fail instead of landing, so the record is committed
   * by being stored. Its stamp is `[token, 0]`, which the head this saver wrote
   * when it took the thread already commits. A fence that expired while
   * nobody took the thread is taken again (see {@link resume}) and the write
   * made once more; otherwise `LEASE_LOST`, with nothing stored.
   */
  async writeFenced<T>(
    threadId: string,
    write: (stamp: OwnerStamp, fence: Lease) => Promise<T>,
  ): Promise<T> {
    const state = await this.hold(threadId)
    try {
      return await write([state.lease.token, 0], state.lease)
    } catch (error) {
      // The records a saver writes have no lease of their own: LEASE_LOST is the fence's.
      if (!isAgentStateError(error, 'LEASE_LOST')) throw error
      const resumed = await this.resumeOrLose(threadId, state, undefined, error)
      return write([resumed.lease.token, 0], resumed.lease)
    }
  }

  /** Commits the records stamped `stamp` with one fenced compare-and-set of the head. */
  async commit(threadId: string, stamp: OwnerStamp): Promise<void> {
    const state = this.owned.get(threadId)
    if (state === undefined || state.lease.token !== stamp[0]) {
      throw staleWriter(threadId, stamp[0], undefined)
    }
    const epochs = { ...state.epochs, [stamp[0]]: stamp[1] }
    try {
      const meta = await this.backend.put(this.layout.owner(threadId), encodeHead(epochs), {
        lease: state.lease,
        ifMatch: state.headVersion,
        writer: { writerId: this.holder },
      })
      state.headVersion = meta.version
      state.epochs = epochs
      state.seq = stamp[1]
    } catch (error) {
      if (!isAgentStateError(error, 'LEASE_LOST') && !isAgentStateError(error, 'LEASE_HELD')) {
        throw error
      }
      if (isAgentStateError(error, 'LEASE_HELD')) {
        this.owned.delete(threadId)
        throw staleWriter(threadId, stamp[0], error)
      }
      // Expired while writing: committed anyway if nobody took the thread meanwhile.
      await this.resumeOrLose(threadId, state, stamp, error)
    }
  }

  /**
   * The epochs this saver last wrote to the thread's head, live lease or not
   * (`undefined` once it lost, released or deleted the thread). The head's
   * epochs only grow: every head write keeps every epoch's sequence number
   * (acquire and resume copy them, commit raises one) and fencing tokens are
   * never reused, so a record these epochs commit is committed by the head
   * whoever wrote it since. A record they do not commit (another writer's,
   * one of this saver's still in flight) needs the head (`EpochCache`).
   */
  knownEpochs(threadId: string): Epochs | undefined {
    return this.owned.get(threadId)?.epochs
  }

  /**
   * Whether the lease of `state` cannot have expired yet: less than half its
   * time since it was acquired or renewed (local monotonic clock, measured
   * from after the server answered); past that, a write renews it first.
   */
  private surelyLive(state: Owned): boolean {
    return performance.now() - state.since <= this.ttlMs / 2
  }

  /** The lease held on the thread, if this saver owns it. */
  leaseOf(threadId: string): Lease | undefined {
    return this.owned.get(threadId)?.lease
  }

  /** Forgets the thread (after `deleteThread`). */
  forget(threadId: string): void {
    this.owned.delete(threadId)
  }

  /** Releases the thread's lease so another writer can take it at once; resolves whether it was held. */
  async release(threadId: string): Promise<boolean> {
    const state = this.owned.get(threadId)
    this.owned.delete(threadId)
    return state === undefined ? false : this.backend.releaseLease(state.lease)
  }
}

/** Reads a thread's committed epochs (empty when the thread was never owned). */
export async function readEpochs(
  backend: Backend,
  layout: KeyLayout,
  threadId: string,
): Promise<Epochs> {
  const key = layout.owner(threadId)
  const head = await backend.get(key)
  return head === null ? {} : decodeHead(head.value, key)
}
