import { type Backend, type Clock, isAgentStateError, walkList } from '@agent-state/core'
import { runtimeError } from '../shared/errors.js'
import { runEffectKey, runOpenMarkerKey, runOpenPrefix } from '../shared/layout.js'
import { idempotencyKeyOf } from './effect.js'
import { decodeRunRecord } from './run-codec.js'
import type { RunOwnership } from './run-ownership.js'
import { type EffectRecord, effectRecordSchema } from './run-records.js'

/** A verified effect record with the backend version it was read at. */
export interface LoadedEffect {
  readonly record: EffectRecord
  readonly version: string
}

/**
 * Checks what the schema cannot: the record belongs to its key and run, its
 * idempotency key is the derived one, its outcome fields match its state, and
 * no attempt newer than the run's newest one wrote it.
 */
function checkConsistent(
  record: EffectRecord,
  runId: string,
  effectId: string,
  newestToken: number,
) {
  const key = runEffectKey(runId, effectId)
  const contradiction = (what: string, extra: Record<string, unknown> = {}) =>
    runtimeError('RUN_RECORD_CONTRADICTORY', `The effect record ${key} ${what}`, {
      key,
      runId,
      effectId,
      ...extra,
    })
  if (record.runId !== runId || record.effectId !== effectId) {
    throw contradiction('names another run or effect', {
      storedRunId: record.runId,
      storedEffectId: record.effectId,
    })
  }
  if (record.idempotencyKey !== idempotencyKeyOf(runId, effectId)) {
    throw contradiction('carries an idempotency key not derived from its ids')
  }
  if (record.state === 'confirmed' && record.error !== null) {
    throw contradiction('is both confirmed and failed')
  }
  if (record.state === 'failed' && (record.error === null || record.result !== null)) {
    throw contradiction('is failed without an error, or both failed and confirmed')
  }
  if (
    record.state !== 'confirmed' &&
    record.state !== 'failed' &&
    (record.result !== null || record.error !== null)
  ) {
    throw contradiction(`is ${record.state} yet holds an outcome`)
  }
  if (record.token > newestToken) {
    throw contradiction('was written by an attempt newer than the run\u2019s newest attempt', {
      token: record.token,
      newestToken,
    })
  }
}

/** Reads and verifies one effect record, or `null` when none is stored. */
export async function loadEffect(
  backend: Backend,
  runId: string,
  effectId: string,
  newestToken: number,
): Promise<LoadedEffect | null> {
  const key = runEffectKey(runId, effectId)
  const found = await backend.get(key)
  if (found === null) return null
  const record = decodeRunRecord(found.value, 'effect', effectRecordSchema, key)
  checkConsistent(record, runId, effectId, newestToken)
  return { record, version: found.meta.version }
}

/** The owner-side context every ledger write needs. */
export interface LedgerContext {
  readonly backend: Backend
  readonly runId: string
  readonly ownership: RunOwnership
  readonly attemptId: string
  readonly token: number
  readonly clock: Clock
}

/**
 * The run's effects that may be incomplete, found by listing their markers:
 * keys only, one page at a time, so the cost follows the number of
 * incomplete effects, not the run's size. Each is then read and verified.
 *
 * @throws `RUN_RECORD_MISSING` for a marker whose effect record is gone.
 */
export async function listIncomplete(
  backend: Backend,
  runId: string,
  newestToken: number,
): Promise<LoadedEffect[]> {
  const prefix = runOpenPrefix(runId)
  const found: LoadedEffect[] = []
  for await (const page of walkList(backend, { prefix })) {
    for (const entry of page.entries) {
      const effectId = entry.key.slice(prefix.length)
      const loaded = await loadEffect(backend, runId, effectId, newestToken)
      if (loaded === null) {
        throw runtimeError(
          'RUN_RECORD_MISSING',
          `Effect ${effectId} of run ${runId} is marked incomplete but its record is missing`,
          { runId, effectId, key: entry.key },
        )
      }
      found.push(loaded)
    }
  }
  return found
}

/** Removes the marker of an effect found final (a crash hit between its outcome and the marker's removal). */
export async function dropStaleMarker(backend: Backend, runId: string, effectId: string) {
  try {
    await backend.delete(runOpenMarkerKey(runId, effectId))
  } catch (error) {
    if (!isAgentStateError(error)) throw error
    // Left for the next resume: a stale marker only costs one read.
  }
}
