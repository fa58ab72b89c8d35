/**
 * The run's per-state index of unsettled effects: one empty marker per unsettled effect at
 * `runs/<run id>/states/<state>/<effect id>`, so the effects of a run are counted by state
 * from key listings, without reading one effect record (docs/runtime/runs-and-effects.md,
 * Counting effects by state).
 *
 * Markers are not written atomically with the effect record (no backend call writes two
 * keys), so the order of the writes makes every crash window *visible* in the listing
 * instead (see {@link moveStateMarker}): an effect with an incomplete-marker and exactly one
 * state marker is in that state; an effect with an incomplete-marker and no or several
 * state markers, or with a state marker and no incomplete-marker, is *ambiguous*, and only
 * those are read. The next owner of the run repairs them ({@link repairStateIndex}).
 */
import type { Backend } from '@agent-state/core'
import { RUNS_PREFIX, runOpenMarkerKey, runOpenPrefix } from '../shared/layout.js'
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

/** The prefix of the run's state markers in `state`. */
export function runStatePrefix(runId: string, state: UnsettledState): string {
  return `${RUNS_PREFIX}${runId}/states/${state}/`
}

/** The marker saying `effectId` is in `state`. */
export function runStateMarkerKey(runId: string, state: UnsettledState, effectId: string): string {
  return `${runStatePrefix(runId, state)}${effectId}`
}

const EMPTY = new Uint8Array(0)

/**
 * Writes an effect record and moves its state marker around that write, in the one order
 * that keeps every crash window visible to a listing:
 *
 * - into an unsettled state (a new effect too): put the new state's marker, write the
 *   record, delete the old marker (a crash in between leaves two markers, or a marker
 *   without an incomplete-marker: ambiguous);
 * - into a settled state: delete the old marker, write the record (a crash in between, or a
 *   refused write, leaves no marker beside the incomplete-marker: ambiguous).
 *
 * So a single state marker beside an incomplete-marker is never wrong. `write` is the
 * fenced, conditional record write; when it fails, a marker this call put is left (two
 * markers: ambiguous, repaired by the next owner), never a wrong single one.
 */
export async function moveStateMarker<T>(
  ctx: LedgerContext,
  record: EffectRecord,
  from: EffectState | null,
  write: () => Promise<T>,
): Promise<T> {
  const to = record.state
  const marker = (state: UnsettledState) => runStateMarkerKey(ctx.runId, state, record.effectId)
  const old = from !== null && isUnsettled(from) && from !== to ? marker(from) : null
  if (!isUnsettled(to)) {
    if (old !== null) await ctx.backend.delete(old)
    return write()
  }
  // Also before a new effect's create-only record: a marker without a record or without an
  // incomplete-marker is ambiguous, so it is read (no record: not counted) and repaired.
  if (from !== to) await ctx.backend.put(marker(to), EMPTY)
  const written = await write()
  if (old !== null) await ctx.backend.delete(old)
  return written
}

/** Every key under `prefix`, suffix only, by listing pages of keys (no value is read). */
async function listSuffixes(backend: Backend, prefix: string): Promise<string[]> {
  const found: string[] = []
  let cursor: string | undefined
  do {
    const page = await backend.list({
      prefix,
      limit: 1000,
      ...(cursor === undefined ? {} : { cursor }),
    })
    for (const entry of page.entries) found.push(entry.key.slice(prefix.length))
    cursor = page.cursor
  } while (cursor !== undefined)
  return found
}

/** What the listings say about a run's unsettled effects. */
export interface StateListing {
  /** Effects whose state the listing alone tells, by state, each list in key order. */
  readonly known: Readonly<Record<UnsettledState, readonly string[]>>
  /**
   * Effects in a crash window (or written by a runtime without the index): read to know.
   * `marked`: whether it has an incomplete-marker (then its record must exist).
   */
  readonly ambiguous: readonly { readonly effectId: string; readonly marked: boolean }[]
}

/**
 * Lists the run's incomplete-markers and state markers (keys only, pages of 1,000) and
 * classifies each effect they name: known (an incomplete-marker and exactly one state
 * marker) or ambiguous (anything else).
 */
export async function listStates(backend: Backend, runId: string): Promise<StateListing> {
  const [open, ...byState] = await Promise.all([
    listSuffixes(backend, runOpenPrefix(runId)),
    ...UNSETTLED_STATES.map((state) => listSuffixes(backend, runStatePrefix(runId, state))),
  ])
  const states = new Map<string, UnsettledState[]>()
  UNSETTLED_STATES.forEach((state, i) => {
    for (const id of byState[i] ?? []) states.set(id, [...(states.get(id) ?? []), state])
  })
  const openSet = new Set(open)
  const known: Record<UnsettledState, string[]> = { unknown: [], submitted: [], planned: [] }
  const ambiguous = new Set<string>()
  for (const id of open) {
    const found = states.get(id) ?? []
    const [only] = found
    if (found.length === 1 && only !== undefined) known[only].push(id)
    else ambiguous.add(id)
  }
  for (const id of states.keys()) if (!openSet.has(id)) ambiguous.add(id)
  return {
    known,
    ambiguous: [...ambiguous]
      .sort()
      .map((effectId) => ({ effectId, marked: openSet.has(effectId) })),
  }
}

/**
 * Repairs the index of a run this attempt owns: every ambiguous effect is read and its
 * markers set to its record's state (one marker when unsettled, none when settled or
 * missing); an unsettled effect without an incomplete-marker (a crash between its planned
 * record and that marker) gets it, so recovery sees it too. Costs the listings plus one read per ambiguous effect: none for a run left by a
 * clean process, a few after a crash, every unsettled effect once for a run written before
 * the index (which is how such a run is upgraded). `read` answers `undefined` for a record
 * it cannot read: its markers are left as they are (ambiguous).
 */
export async function repairStateIndex(
  ctx: LedgerContext,
  read: (effectId: string) => Promise<EffectRecord | null | undefined>,
): Promise<number> {
  const { ambiguous } = await listStates(ctx.backend, ctx.runId)
  for (const { effectId, marked } of ambiguous) {
    const record = await read(effectId)
    if (record === undefined) continue
    const keep = record !== null && isUnsettled(record.state) ? record.state : null
    if (keep !== null) await ctx.backend.put(runStateMarkerKey(ctx.runId, keep, effectId), EMPTY)
    if (keep !== null && !marked)
      await ctx.backend.put(runOpenMarkerKey(ctx.runId, effectId), EMPTY)
    for (const state of UNSETTLED_STATES) {
      if (state !== keep) await ctx.backend.delete(runStateMarkerKey(ctx.runId, state, effectId))
    }
  }
  return ambiguous.length
}
