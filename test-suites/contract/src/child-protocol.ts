/**
 * Messages between the suite (parent) and a child process running
 * `child-runner.ts`, over Node's IPC channel.
 */

/** First message to a child: which backend to load. */
export interface InitMessage {
  readonly type: 'init'
  readonly module: string
  readonly options: unknown
  readonly namespace: string
  /** Load the module's `createSteppedBackend` (frozen-writer tier) instead of `createBackend`. */
  readonly stepped?: boolean
}

/** A scenario step the parent asks a child to run. */
export type ChildCommand =
  | { readonly type: 'increments'; readonly key: string; readonly count: number }
  | {
      /** Create-if-absent, or compare-and-set when `ifMatch` is given: 'won' or 'lost'. */
      readonly type: 'create-once'
      readonly key: string
      readonly value: string
      readonly ifMatch?: string
    }
  | {
      readonly type: 'lease-log'
      readonly lockKey: string
      readonly logKey: string
      readonly rounds: number
      readonly ttlMs: number
    }
  | {
      readonly type: 'acquire'
      readonly key: string
      readonly holder: string
      readonly ttlMs: number
      readonly waitMs: number
    }
  | {
      readonly type: 'fenced-put'
      readonly key: string
      readonly value: string
      readonly lease: unknown
    }
  | { readonly type: 'stale-attempt'; readonly key: string; readonly lease: unknown }
  | { readonly type: 'put-many'; readonly keys: readonly string[]; readonly value: string }
  | {
      /** Puts and deletes keys `prefix` + odd numbers (some nested) for `durationMs`. */
      readonly type: 'churn'
      readonly prefix: string
      readonly seed: number
      readonly durationMs: number
    }
  | {
      /**
       * The frozen-writer tier's holder: takes the key's lease, sends
       * `frozen-held`, then loops a fenced put and a renew until one fails.
       * With a `step`, it stops itself (SIGSTOP) when a write reaches that
       * step for the (skip + 1)th time (skip 0: in a put, 1: in a renew);
       * otherwise the parent stops it. Replies with a {@link FrozenWoke}.
       */
      readonly type: 'frozen-holder'
      readonly key: string
      readonly ttlMs: number
      readonly step: string | null
      readonly skip: number
    }
  | {
      /**
       * The change-notification burst: `writes` writes over `keys` in turn,
       * each value `${tag}:${i}` (every seventh a delete). Resolves the count.
       */
      readonly type: 'burst'
      readonly keys: readonly string[]
      readonly writes: number
      readonly tag: string
    }
  | {
      /**
       * The change-notification release check: watches `prefix`, waits for
       * the first hint, then ends the watch by aborting its signal (`abort`)
       * or by closing the backend (`close`), and reports whether the pending
       * `next()` ended. Afterwards (abort: after closing too) the child stops
       * listening and unrefs its IPC channel, so it exits on its own unless a
       * handle leaked. Replies with a {@link WatchReleased}.
       */
      readonly type: 'watch-release'
      readonly prefix: string
      readonly how: 'abort' | 'close'
    }
  | {
      /**
       * The process-death durability check's writer: creates `key` with a
       * first value, overwrites it by compare-and-set with the checked value
       * of `counter` and `filler` (child-values.ts), creates and deletes
       * `goneKey`, then replies with the version of `key`'s acknowledged
       * value. The parent kills it with SIGKILL on that reply.
       */
      readonly type: 'acked-writes'
      readonly key: string
      readonly counter: number
      readonly filler: number
      readonly goneKey: string
    }
  | {
      readonly type: 'crash-writer'
      readonly prefix: string
      readonly start: number
      readonly leaseKey: string
      readonly leaseTtlMs: number
    }

/** A request with its id. */
export interface RequestMessage {
  readonly type: 'request'
  readonly id: number
  readonly command: ChildCommand
}

/** Messages a child sends. */
export type ChildMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'reply'; readonly id: number; readonly ok: true; readonly result: unknown }
  | {
      readonly type: 'reply'
      readonly id: number
      readonly ok: false
      readonly error: string
      readonly code?: string
    }
  | { readonly type: 'intent'; readonly seq: number; readonly op: CrashOp }
  | {
      readonly type: 'ack'
      readonly seq: number
      readonly op: CrashOp['kind']
      readonly version?: string
    }
  | { readonly type: 'crash-lease'; readonly token: number }
  | { readonly type: 'frozen-held'; readonly token: number }

/**
 * What a frozen holder saw once woken: the code of its first failed
 * operation, then what a renew, a fenced put and a release of its lease did
 * (a code, or `ok:<json result>`), and how many writes it had started.
 */
export interface FrozenWoke {
  readonly failed: string
  readonly renew: string
  readonly put: string
  readonly release: string
  readonly writes: number
}

/** What the watch-release child saw. */
export interface WatchReleased {
  /** The first hint's kind. */
  readonly first: string
  /** Whether the pending `next()` resolved `done` within 5 s of the abort or close. */
  readonly ended: boolean
}

/** What the process-death writer acknowledged: the version of its last write to the key. */
export interface AckedWrites {
  readonly version: string
}

/** One write of the crash writer. */
export interface CrashOp {
  readonly kind: 'put' | 'cas' | 'delete'
  readonly key: string
  /** The counter written (put / cas). */
  readonly counter?: number
}
