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

/** One write of the crash writer. */
export interface CrashOp {
  readonly kind: 'put' | 'cas' | 'delete'
  readonly key: string
  /** The counter written (put / cas). */
  readonly counter?: number
}
