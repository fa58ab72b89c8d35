/**
 * A linearizability checker in the style of Wing & Gong with Lowe's
 * memoization: search for an order of the recorded operations that respects
 * real time (an operation that responded before another was invoked comes
 * first) and that the sequential model accepts. Histories are checked per key,
 * since operations on different keys of a register store commute.
 */

/** One recorded operation. */
export interface HistoryOp<I, O> {
  /** The object the operation acts on; histories are split per key. */
  readonly key: string
  /** Who ran it, for messages. */
  readonly process?: string | number
  readonly input: I
  /** What it returned; ignored for a pending operation. */
  readonly output: O
  /** When it was invoked, on a clock shared by all processes. */
  readonly invoke: number
  /** When it responded; `Infinity` (or `pending`) for an operation that never did. */
  readonly response: number
  /** The operation never responded: it may or may not have taken effect. */
  readonly pending?: boolean
}

/** A sequential specification. */
export interface SequentialModel<S, I, O> {
  readonly init: S
  /**
   * The state after applying `input` with the observed `output` to `state`,
   * or `undefined` when that output is impossible from `state`. For a pending
   * operation `output` is `undefined`.
   */
  step(state: S, input: I, output: O | undefined): S | undefined
  /** A string identifying the state, for memoization. */
  key(state: S): string
}

/** Outcome of {@link checkLinearizability}. */
export interface LinearizabilityResult {
  /** `undecided` when the search budget ran out. */
  readonly status: 'linearizable' | 'not-linearizable' | 'undecided'
  /** The first key whose history failed or was undecided. */
  readonly key?: string
  /** Operations examined, for reports. */
  readonly explored: number
}

/** Options of {@link checkLinearizability}. */
export interface LinearizabilityOptions {
  /** Largest number of search states per key before giving up. Default 2 000 000. */
  readonly budget?: number
}

/**
 * Checks that `history` is linearizable with respect to `model`, key by key.
 *
 * @example
 * ```ts
 * const result = checkLinearizability(history, casRegisterModel)
 * if (result.status !== 'linearizable') throw new Error(`not linearizable at ${result.key}`)
 * ```
 */
export function checkLinearizability<S, I, O>(
  history: readonly HistoryOp<I, O>[],
  model: SequentialModel<S, I, O>,
  options: LinearizabilityOptions = {},
): LinearizabilityResult {
  const budget = options.budget ?? 2_000_000
  const byKey = new Map<string, HistoryOp<I, O>[]>()
  for (const op of history) {
    const list = byKey.get(op.key)
    if (list === undefined) byKey.set(op.key, [op])
    else list.push(op)
  }
  let explored = 0
  for (const [key, ops] of byKey) {
    const outcome = checkOne(ops, model, budget)
    explored += outcome.explored
    if (outcome.status !== 'linearizable') return { status: outcome.status, key, explored }
  }
  return { status: 'linearizable', explored }
}

function checkOne<S, I, O>(
  unsorted: readonly HistoryOp<I, O>[],
  model: SequentialModel<S, I, O>,
  budget: number,
): { status: LinearizabilityResult['status']; explored: number } {
  const ops = [...unsorted].sort((a, b) => a.invoke - b.invoke)
  const n = ops.length
  const pending = ops.map((op) => op.pending === true || op.response === Number.POSITIVE_INFINITY)
  const response = ops.map((op, i) => (pending[i] ? Number.POSITIVE_INFINITY : op.response))
  const required = pending.reduce((count, p) => count + (p ? 0 : 1), 0)
  const done = new Uint8Array(n)
  const seen = new Set<string>()
  let explored = 0
  let exhausted = false

  const search = (state: S, completed: number): boolean => {
    if (completed === required) return true
    if (explored >= budget) {
      exhausted = true
      return false
    }
    const memo = `${Buffer.from(done).toString('base64')}|${model.key(state)}`
    if (seen.has(memo)) return false
    seen.add(memo)
    explored++
    // An operation may go next only if no other remaining operation responded before it was invoked.
    let horizon = Number.POSITIVE_INFINITY
    for (let i = 0; i < n; i++) {
      const r = response[i] as number
      if (done[i] === 0 && r < horizon) horizon = r
    }
    for (let i = 0; i < n; i++) {
      if (done[i] === 1) continue
      const op = ops[i] as HistoryOp<I, O>
      if (op.invoke > horizon) break
      const next = model.step(state, op.input, pending[i] ? undefined : op.output)
      if (next === undefined) continue
      done[i] = 1
      const found = search(next, completed + (pending[i] ? 0 : 1))
      done[i] = 0
      if (found) return true
      if (exhausted) return false
    }
    return false
  }

  const ok = search(model.init, 0)
  return { status: ok ? 'linearizable' : exhausted ? 'undecided' : 'not-linearizable', explored }
}

/** An operation on a compare-and-set register. */
export type CasInput =
  | { readonly type: 'get' }
  | { readonly type: 'put'; readonly ifMatch?: string; readonly ifNoneMatch?: true }
  | { readonly type: 'delete'; readonly ifMatch?: string }

/** What a compare-and-set register operation returned. */
export type CasOutput =
  | { readonly type: 'get'; readonly version: string | null }
  | { readonly type: 'put'; readonly ok: true; readonly version: string }
  | { readonly type: 'put'; readonly ok: false }
  | { readonly type: 'delete'; readonly ok: true; readonly existed: boolean }
  | { readonly type: 'delete'; readonly ok: false }

/**
 * The sequential model of one key of a Backend as a compare-and-set register
 * whose state is the current version (`null` when absent). Versions are unique
 * per write, so the version identifies the value. A delete (unconditional, or
 * with `ifMatch`) returns whether a value existed; a failed conditional delete
 * is `ok: false` (`PRECONDITION_FAILED`).
 */
export const casRegisterModel: SequentialModel<string | null, CasInput, CasOutput> = {
  init: null,
  key: (state) => (state === null ? '\u0000' : state),
  step(state, input, output) {
    if (input.type === 'get') {
      if (output === undefined) return state
      return output.type === 'get' && output.version === state ? state : undefined
    }
    if (input.type === 'delete') {
      const holds = input.ifMatch === undefined || state === input.ifMatch
      // A pending delete's effect is known: the key is gone if its precondition held.
      if (output === undefined) return holds ? null : state
      if (output.type !== 'delete') return undefined
      if (!output.ok) return holds ? undefined : state
      return holds && output.existed === (state !== null) ? null : undefined
    }
    const holds =
      input.ifMatch !== undefined
        ? state === input.ifMatch
        : input.ifNoneMatch === true
          ? state === null
          : true
    // A pending put's new version is unknown, so the model can only drop it (never linearize it).
    if (output === undefined) return undefined
    if (output.type !== 'put') return undefined
    if (output.ok) return holds ? output.version : undefined
    return holds ? undefined : state
  },
}
