/**
 * A "subject" is one way of storing bytes on one backend: agent-state through
 * the Backend interface, the raw client doing the least equivalent work, or a
 * peer library (Keyv, unstorage). Workloads drive every subject of a backend
 * through the same calls, so the numbers compare like with like.
 */

/** The storage a subject runs on. */
export type BackendKind = 'memory' | 'fs' | 'sqlite' | 'redis' | 's3'

/** Which code path a subject measures. */
export type PathKind = 'agent-state' | 'raw' | 'keyv' | 'unstorage'

/** The operations a subject may implement; the ones it lacks are not measured for it. */
export type Capability = 'cas' | 'create' | 'lease' | 'list'

/** One page of a listing as a workload sees it. */
export interface PageResult {
  /** Keys in the page, in the order the subject returned them. */
  readonly keys: readonly string[]
  /** Present when more may follow. */
  readonly cursor?: string
}

/**
 * The opaque token a subject's conditional write needs next time: a version,
 * an ETag, a revision number. `undefined` for subjects that have none.
 */
export type CasToken = string | number | undefined

/** One path on one backend. Keys are `/`-separated ASCII, valid for every subject. */
export interface Subject {
  readonly backend: BackendKind
  readonly path: PathKind
  /** Short label for tables, for example `unstorage (fs driver)`. */
  readonly label: string
  /** What each operation does on this subject, where it is not the obvious thing. */
  readonly notes: Readonly<Partial<Record<string, string>>>
  /** Unconditional replace. */
  put(key: string, value: Uint8Array): Promise<void>
  /** The stored bytes, or `null`. */
  get(key: string): Promise<Uint8Array | null>
  /** Whether the key holds a value (metadata only where the subject has it). */
  head(key: string): Promise<boolean>
  /** Removes the key. */
  delete(key: string): Promise<void>
  /**
   * First write of a key used for compare-and-set: an unconditional write
   * that returns the token the next `cas` needs.
   */
  casInit?(key: string, value: Uint8Array): Promise<CasToken>
  /** Replaces the value only if the key still has `token`; returns the next token. Throws on a mismatch. */
  cas?(key: string, value: Uint8Array, token: CasToken): Promise<CasToken>
  /** Writes only when the key holds no value; throws when it does. */
  create?(key: string, value: Uint8Array): Promise<void>
  /** One acquire → renew → release cycle on `key` (or the least equivalent conditional writes). */
  leaseCycle?(key: string): Promise<void>
  /** One page of at most `limit` keys under `prefix`, after `cursor`. */
  listPage?(prefix: string, limit: number, cursor: string | undefined): Promise<PageResult>
  /**
   * Writes `count` keys `${prefix}${index padded to 7 digits}` holding `value`,
   * as fast as the subject allows (setup, not measured).
   */
  populate?(prefix: string, count: number, value: Uint8Array): Promise<void>
  /**
   * Told the concurrency before each run, so a raw client can pick its
   * cheapest API for it (the sync fs API at 1, `fs.promises` above).
   */
  prepareFor?(concurrency: number): void
  /** Releases clients, handles and files. */
  close(): Promise<void>
}

/** The key of index `index` in a populated prefix. */
export function populatedKey(prefix: string, index: number): string {
  return `${prefix}${String(index).padStart(7, '0')}`
}

/** Runs `task(index)` for 0..count-1 with at most `width` in flight. */
export async function forEachConcurrent(
  count: number,
  width: number,
  task: (index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0
  const lanes: Promise<void>[] = []
  for (let lane = 0; lane < Math.min(width, count); lane++) {
    lanes.push(
      (async () => {
        while (next < count) {
          const index = next++
          await task(index)
        }
      })(),
    )
  }
  await Promise.all(lanes)
}
