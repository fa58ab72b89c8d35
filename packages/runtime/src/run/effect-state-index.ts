/**
 * The run's index of its unknown effects: one empty marker per `unknown` effect at
 * `runs/<run id>/states/unknown/<effect id>`, so the effects operators must find are counted
 * from a key listing, and the effects in flight (planned or submitted) are the
 * incomplete-markers without one (docs/runtime/runs-and-effects.md, Counting effects by
 * state). Only entering or leaving `unknown` moves a marker (reconciliation, resume, an
 * ambiguous dispatch error, `resolveEffect`); the normal path (planned → submitted →
 * confirmed or failed) writes none, so it costs exactly what it cost before the index.
 *
 * A marker is not written atomically with the effect record (no backend call writes two
 * keys), so a move is bracketed by a `moving` marker at `runs/<run id>/states/moving/<effect
 * id>` ({@link moveUnknownMarker}): an effect with a `moving` marker, or with an `unknown`
 * marker and no incomplete-marker, is *ambiguous*, and only those are read. The next owner
 * of the run repairs them ({@link repairUnknownIndex}).
 */
import { type Backend, walkList } from '@agent-state/core'
import { RUNS_PREFIX, runOpenPrefix } from '../shared/layout.js'
import type { LedgerContext } from './effect-ledger.js'
import type { EffectRecord, EffectState } from './run-records.js'

/** The states an unsettled effect can be in, in the order the views show them (attention first). */
export const UNSETTLED_STATES = ['unknown', 'submitted', 'planned'] as const
/** A state of an effect that is not settled. */
export type UnsettledState = (typeof UNSETTLED_STATES)[number]

/** Whether `state` is one of {@link UNSETTLED_STATES}. */
export function isUnsettled(state: EffectState): state is UnsettledState {
  return (UNSETTLED_STATES as readonly string[]).includes(state)
}

/** The markers of the index: the effect is `unknown`; an `unknown` marker is `moving`. */
export const STATE_MARKERS = ['unknown', 'moving'] as const
/** See {@link STATE_MARKERS}. */
export type StateMarker = (typeof STATE_MARKERS)[number]

/** The prefix of the run's index, both kinds of marker. */
export function runStatePrefix(runId: string): string {
  return `${RUNS_PREFIX}${runId}/states/`
}

/** The `marker` of `effectId`. */
export function runStateMarkerKey(runId: string, marker: StateMarker, effectId: string): string {
  return `${runStatePrefix(runId)}${marker}/${effectId}`
}

const EMPTY = new Uint8Array(0)

/**
 * Writes an effect record, moving its `unknown` marker when the write enters or leaves
 * `unknown`: put the `moving` marker, write the record, put (entering) or delete (leaving)
 * the `unknown` marker, delete the `moving` marker. A crash anywhere in between, or a refused
 * write, leaves the `moving` marker: the effect is ambiguous (read), never under a wrong
 * marker or wrongly without one. Any other write (the normal path) is `write` alone: no call
 * more. `write` is the fenced, conditional record write.
 */
export async function moveUnknownMarker<T>(
  ctx: LedgerContext,
  record: EffectRecord,
  from: EffectState | null,
  write: () => Promise<T>,
): Promise<T> {
  const enters = record.state === 'unknown' && from !== 'unknown'
  const leaves = from === 'unknown' && record.state !== 'unknown'
  if (!enters && !leaves) return write()
  const moving = runStateMarkerKey(ctx.runId, 'moving', record.effectId)
  const unknown = runStateMarkerKey(ctx.runId, 'unknown', record.effectId)
  await ctx.backend.put(moving, EMPTY)
  const written = await write()
  if (enters) await ctx.backend.put(unknown, EMPTY)
  else await ctx.backend.delete(unknown)
  await ctx.backend.delete(moving)
  return written
}

/** Every key under `prefix`, suffix only, by listing pages of keys (no value is read). */
async function listSuffixes(backend: Backend, prefix: string): Promise<string[]> {
  const found: string[] = []
  for await (const page of walkList(backend, { prefix, limit: 1000 })) {
    for (const entry of page.entries) found.push(entry.key.slice(prefix.length))
  }
  return found
}

/** An effect the listing cannot tell: a `moving` marker, or an `unknown` one without an incomplete-marker. */
export interface AmbiguousEffect {
  readonly effectId: string
  /** Whether it has an incomplete-marker (then its record must exist). */
  readonly marked: boolean
  /** Whether it has an `unknown` marker. */
  readonly unknown: boolean
  /** Whether it has a `moving` marker. */
  readonly moving: boolean
}

/** What the listings say about a run's incomplete effects, each list in key order. */
export interface StateListing {
  /** Every effect with an incomplete-marker. */
  readonly open: readonly string[]
  /** Effects with an incomplete-marker and an `unknown` marker (and no `moving` one): unknown. */
  readonly unknown: readonly string[]
  /** Effects with an incomplete-marker and neither marker: planned or submitted (when the run is indexed). */
  readonly inFlight: readonly string[]
  /** Effects in a crash window of a marker move: read to know. */
  readonly ambiguous: readonly AmbiguousEffect[]
}

/**
 * Lists the run's incomplete-markers and its index (keys only, pages of 1,000) and
 * classifies each effect they name.
 */
export async function listStates(backend: Backend, runId: string): Promise<StateListing> {
  const [open, index] = await Promise.all([
    listSuffixes(backend, runOpenPrefix(runId)),
    listSuffixes(backend, runStatePrefix(runId)),
  ])
  const marked = new Set(open)
  const byMarker: Record<StateMarker, Set<string>> = { unknown: new Set(), moving: new Set() }
  for (const suffix of index) {
    const slash = suffix.indexOf('/')
    const marker = suffix.slice(0, slash) as StateMarker
    if (slash > 0 && STATE_MARKERS.includes(marker)) byMarker[marker].add(suffix.slice(slash + 1))
  }
  const ambiguousIds = new Set(byMarker.moving)
  for (const id of byMarker.unknown) if (!marked.has(id)) ambiguousIds.add(id)
  const unknown: string[] = []
  const inFlight: string[] = []
  for (const id of open) {
    if (ambiguousIds.has(id)) continue
    if (byMarker.unknown.has(id)) unknown.push(id)
    else inFlight.push(id)
  }
  return {
    open,
    unknown,
    inFlight,
    ambiguous: [...ambiguousIds].sort().map((effectId) => ({
      effectId,
      marked: marked.has(effectId),
      unknown: byMarker.unknown.has(effectId),
      moving: byMarker.moving.has(effectId),
    })),
  }
}

/**
 * Repairs the index of a run this attempt owns: every effect with a `moving` marker (a crash
 * or a refused write inside a move) is read, its `unknown` marker set to its record (present
 * when it is unknown, absent otherwise), then its `moving` marker removed. Costs one listing
 * (of `moving` markers) plus a read per such effect: none for a run left by a clean process.
 * (An `unknown` marker without an incomplete-marker, which readers treat as ambiguous too,
 * is never left by this runtime: a final record's incomplete-marker is deleted after the move.)
 * With `all` (a run not yet indexed: its head lacks `unknownIndex`), every incomplete effect is
 * read and marked instead, which is how a run written before the index gets one. `read`
 * answers `undefined` for a record it cannot read: its markers are left as they are
 * (ambiguous). Returns how many effects it read.
 */
export async function repairUnknownIndex(
  ctx: LedgerContext,
  read: (effectId: string) => Promise<EffectRecord | null | undefined>,
  all: boolean,
): Promise<number> {
  let targets: readonly AmbiguousEffect[]
  if (all) {
    const listing = await listStates(ctx.backend, ctx.runId)
    const listed = (unknown: boolean) => (effectId: string) => ({
      effectId,
      marked: true,
      unknown,
      moving: false,
    })
    targets = [
      ...listing.ambiguous,
      ...listing.unknown.map(listed(true)),
      ...listing.inFlight.map(listed(false)),
    ]
  } else {
    // Whether it has an `unknown` marker is not listed: both cases are written as if unsure.
    const moving = await listSuffixes(ctx.backend, `${runStatePrefix(ctx.runId)}moving/`)
    targets = moving.map((effectId) => ({ effectId, marked: true, unknown: true, moving: true }))
  }
  for (const { effectId, unknown, moving } of targets) {
    const record = await read(effectId)
    if (record === undefined) continue
    const key = runStateMarkerKey(ctx.runId, 'unknown', effectId)
    if (record?.state === 'unknown') {
      if (!unknown || moving) await ctx.backend.put(key, EMPTY)
    } else if (unknown) {
      await ctx.backend.delete(key)
    }
    if (moving) await ctx.backend.delete(runStateMarkerKey(ctx.runId, 'moving', effectId))
  }
  return targets.length
}
