/**
 * Change notification: the optional `watch` operation of the Backend
 * contract, and the one hint stream every backend builds it from.
 *
 * A hint is never data: it tells a watcher what to re-read. The rules (see
 * docs/contract.md, "Change notification") are kept here in one place, so
 * that every backend coalesces, bounds, orders and ends its streams the same
 * way; a backend only decides *when* a key changed and *when* it may have
 * missed something.
 */
import { AgentStateError } from './errors.js'
import { MAX_KEY_BYTES, utf8ByteLength } from './keys.js'

/**
 * One change hint.
 * - `key`: the named key (under the watched prefix) was written or deleted;
 * - `prefix`: some key starting with `prefix` (which starts with the watched
 *   prefix) was written or deleted, where the backend cannot say which;
 * - `resync`: the backend cannot promise it hinted every change: re-read
 *   everything under the watched prefix. Always the first hint of a watch.
 */
export type ChangeHint =
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'prefix'; readonly prefix: string }
  | { readonly kind: 'resync' }

/** Options of `watch`. */
export interface WatchOptions {
  /** Aborting it ends the iteration and releases every handle of the watch. */
  readonly signal?: AbortSignal
}

/**
 * The `changeNotification` capability: how a change reaches a watcher, and
 * the longest time from a write's acknowledgement to its hint being
 * available to a watcher that is waiting in `next()`.
 * - `push`: the store announces changes; an idle watcher costs no operations;
 * - `poll`: the backend asks the store at an interval; an idle watcher costs
 *   one cheap operation per interval (per instance, not per watcher).
 */
export interface ChangeNotificationCapability {
  readonly mode: 'push' | 'poll'
  /** Worst-case delay from acknowledgement to hint, in milliseconds, on an unloaded host. */
  readonly maxDelayMs: number
}

/**
 * Most hints a watcher may have pending before they are replaced by one
 * `resync` (a watcher that does not consume never makes its backend hold
 * unbounded memory).
 */
export const MAX_PENDING_HINTS = 10_000

/**
 * Test seam a backend instance may carry under this symbol (not part of the
 * contract): a function that breaks the instance's watch channel the way a
 * real failure would (fs: the directory watch fails; Redis: the subscriber
 * connection drops), resolving once it is broken, or a string saying why
 * its delivery has no channel to lose (in-process, polling). The contract
 * suite uses it when it is given no `watchInterrupt` option, so that
 * `agent-state verify`, which opens a URL, proves resync too.
 */
export const WATCH_INTERRUPT: unique symbol = Symbol.for('@agent-state/core/watchInterrupt')

/** What a backend instance may carry under {@link WATCH_INTERRUPT}. */
export type WatchInterruptSeam = (() => Promise<void>) | string

/** The instance's {@link WATCH_INTERRUPT} seam, if it has one. */
export function watchInterruptOf(backend: object): WatchInterruptSeam | undefined {
  const seam = (backend as { [WATCH_INTERRUPT]?: unknown })[WATCH_INTERRUPT]
  return typeof seam === 'function' || typeof seam === 'string'
    ? (seam as WatchInterruptSeam)
    : undefined
}

/** Puts a {@link WATCH_INTERRUPT} seam on an instance (non-enumerable: spreads do not copy it). */
export function setWatchInterrupt<T extends object>(backend: T, seam: WatchInterruptSeam): T {
  Object.defineProperty(backend, WATCH_INTERRUPT, { value: seam, enumerable: false })
  return backend
}

/** The resync hint (one frozen object: hints are read-only). */
export const RESYNC_HINT: ChangeHint = Object.freeze({ kind: 'resync' })

/**
 * Checks a watch prefix: a string of at most `maxKeyBytes` UTF-8 bytes with
 * no lone surrogate (so a prefix of the UTF-16 string is exactly a prefix of
 * its UTF-8 bytes). Throws `INVALID_ARGUMENT`.
 */
export function assertWatchPrefix(prefix: unknown, maxKeyBytes = MAX_KEY_BYTES): string {
  if (typeof prefix !== 'string') {
    throw new AgentStateError('INVALID_ARGUMENT', 'watch prefix must be a string')
  }
  if (!isWellFormed(prefix)) {
    throw new AgentStateError('INVALID_ARGUMENT', 'watch prefix contains a lone surrogate')
  }
  if (utf8ByteLength(prefix) > maxKeyBytes) {
    throw new AgentStateError('INVALID_ARGUMENT', `watch prefix exceeds ${maxKeyBytes} bytes`)
  }
  return prefix
}

function isWellFormed(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1)
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false
      i++
    } else if (unit >= 0xdc00 && unit <= 0xdfff) return false
  }
  return true
}

/**
 * Whether `key` is under `prefix`, by UTF-8 bytes: `a/` matches `a/x`,
 * never `ab` nor `b/x`. For well-formed strings a UTF-16 prefix is a byte
 * prefix, which `assertWatchPrefix` ensures for the prefix.
 */
export function keyMatchesPrefix(key: string, prefix: string): boolean {
  return key.startsWith(prefix)
}

/** Options of {@link createHintStream}. */
export interface HintStreamOptions {
  readonly signal?: AbortSignal | undefined
  /** Pending hints before they collapse into one resync (default {@link MAX_PENDING_HINTS}). */
  readonly maxPending?: number
  /** Called once when the stream ends (abort, `end`, `return`): release the watch's handles here. */
  readonly onEnd?: () => void
}

/**
 * The stream behind one `watch` call: an async iterable of hints, fed by the
 * backend through `key`, `prefix` and `resync`, ended by `end`, an aborted
 * signal, or the consumer's `return` (a `break` out of `for await`).
 *
 * Pending hints are coalesced: a key (or prefix) already pending is not
 * queued again, and a pending `resync` swallows everything else (the
 * watcher re-reads everything anyway). Hints for keys outside the prefix
 * are dropped here, so a backend may feed a wider stream than it was asked.
 */
export interface HintStream extends AsyncIterable<ChangeHint> {
  readonly prefix: string
  /** Whether the stream has ended. */
  readonly ended: boolean
  /** Hints that `key` changed (dropped unless it is under the prefix). */
  key(key: string): void
  /**
   * Hints that something under `prefix` changed: delivered as a `prefix` hint
   * of the longer of the two prefixes when one extends the other; dropped
   * when they are disjoint.
   */
  prefixChanged(prefix: string): void
  /** Hints that the watcher must re-read everything. */
  resync(): void
  /** Makes the first `next()` reject with `error` (a watch that could not start), then ends. */
  fail(error: unknown): void
  /** Ends the iteration: a waiting `next()` resolves `done`. Idempotent. */
  end(): void
}

/** Creates a {@link HintStream}. */
export function createHintStream(prefix: string, options: HintStreamOptions = {}): HintStream {
  const maxPending = options.maxPending ?? MAX_PENDING_HINTS
  const pending = new Map<string, ChangeHint>()
  let resyncPending = false
  let failure: { error: unknown } | undefined
  let ended = false
  let waiter: ((result: IteratorResult<ChangeHint>) => void) | undefined
  let failWaiter: ((error: unknown) => void) | undefined
  const signal = options.signal

  function onAbort(): void {
    end()
  }

  function end(): void {
    if (ended) return
    ended = true
    pending.clear()
    resyncPending = false
    signal?.removeEventListener('abort', onAbort)
    const wake = waiter
    waiter = undefined
    failWaiter = undefined
    wake?.({ done: true, value: undefined })
    options.onEnd?.()
  }

  function push(id: string, hint: ChangeHint): void {
    if (ended || resyncPending) return
    if (waiter !== undefined) {
      const wake = waiter
      waiter = undefined
      failWaiter = undefined
      wake({ done: false, value: hint })
      return
    }
    if (pending.has(id)) return
    if (pending.size >= maxPending) {
      pending.clear()
      resyncPending = true
      return
    }
    pending.set(id, hint)
  }

  const stream: HintStream = {
    prefix,
    get ended() {
      return ended
    },
    key(key) {
      if (keyMatchesPrefix(key, prefix)) push(`k${key}`, { kind: 'key', key })
    },
    prefixChanged(changed) {
      if (keyMatchesPrefix(changed, prefix))
        push(`p${changed}`, { kind: 'prefix', prefix: changed })
      else if (keyMatchesPrefix(prefix, changed)) push(`p${prefix}`, { kind: 'prefix', prefix })
    },
    resync() {
      if (ended) return
      if (waiter !== undefined) {
        push('r', RESYNC_HINT)
        return
      }
      pending.clear()
      resyncPending = true
    },
    fail(error) {
      if (ended) return
      if (failWaiter !== undefined) {
        const reject = failWaiter
        waiter = undefined
        failWaiter = undefined
        end()
        reject(error)
        return
      }
      failure = { error }
    },
    end,
    [Symbol.asyncIterator](): AsyncIterator<ChangeHint> {
      return {
        next(): Promise<IteratorResult<ChangeHint>> {
          if (failure !== undefined) {
            const { error } = failure
            failure = undefined
            end()
            return Promise.reject(error)
          }
          if (ended) return Promise.resolve({ done: true, value: undefined })
          if (resyncPending) {
            resyncPending = false
            return Promise.resolve({ done: false, value: RESYNC_HINT })
          }
          const first = pending.entries().next()
          if (first.done !== true) {
            const [id, hint] = first.value
            pending.delete(id)
            return Promise.resolve({ done: false, value: hint })
          }
          if (waiter !== undefined) {
            return Promise.reject(
              new AgentStateError('INVALID_ARGUMENT', 'watch: next() called while one is pending'),
            )
          }
          return new Promise((resolve, reject) => {
            waiter = resolve
            failWaiter = reject
          })
        },
        return(): Promise<IteratorResult<ChangeHint>> {
          end()
          return Promise.resolve({ done: true, value: undefined })
        },
      }
    },
  }
  if (signal !== undefined) {
    if (signal.aborted) end()
    else signal.addEventListener('abort', onAbort, { once: true })
  }
  return stream
}

/**
 * The watches of one backend instance: `close()` of the instance ends them
 * all, and a write path feeds every matching one.
 */
export interface WatchSet {
  /** Live streams. */
  readonly size: number
  /** Opens a stream, registered until it ends; `onEnd` runs after it is unregistered. */
  open(prefix: string, options: HintStreamOptions): HintStream
  /** Feeds `key` to every stream. */
  key(key: string): void
  /** Feeds a prefix change to every stream. */
  prefixChanged(prefix: string): void
  /** Resyncs every stream. */
  resync(): void
  /** Ends every stream. */
  endAll(): void
}

/** Creates an empty {@link WatchSet}. */
export function createWatchSet(): WatchSet {
  const streams = new Set<HintStream>()
  return {
    get size() {
      return streams.size
    },
    open(prefix, options) {
      // `let`: an already aborted signal ends the stream inside createHintStream.
      let stream: HintStream | undefined
      stream = createHintStream(prefix, {
        ...options,
        onEnd() {
          if (stream !== undefined) streams.delete(stream)
          options.onEnd?.()
        },
      })
      if (!stream.ended) streams.add(stream)
      return stream
    },
    key(key) {
      for (const stream of streams) stream.key(key)
    },
    prefixChanged(prefix) {
      for (const stream of streams) stream.prefixChanged(prefix)
    },
    resync() {
      for (const stream of streams) stream.resync()
    },
    endAll() {
      for (const stream of [...streams]) stream.end()
    },
  }
}

/**
 * A watch that fails at its first `next()`: how `watch` reports an invalid
 * prefix or a closed backend (every contract operation fails by rejecting).
 */
export function failedWatch(error: unknown): AsyncIterable<ChangeHint> {
  const stream = createHintStream('')
  stream.fail(error)
  return stream
}
