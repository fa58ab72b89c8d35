import { hostname } from 'node:os'
import {
  AgentStateError,
  type Backend,
  type Clock,
  isAgentStateError,
  type Lease,
  MAX_LEASE_TTL_MS,
  systemClock,
} from '@agent-state/core'
import type { JsonValue } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { isValidId, uuidv7 } from '../shared/ids.js'
import { runHeadKey } from '../shared/layout.js'
import { type LedgerContext, loadEffect } from './effect-ledger.js'
import { repairUnknownIndex } from './effect-state-index.js'
import { decodeRunRecord, encodeRunRecord } from './run-codec.js'
import { RunOwnership } from './run-ownership.js'
import {
  type EffectRecord,
  MAX_RUN_AUDIT_ENTRIES,
  type RunAuditEntry,
  type RunHead,
  runHeadSchema,
} from './run-records.js'

/** Default lease time-to-live of a run owner: 5 minutes. */
export const DEFAULT_RUN_LEASE_TTL_MS = 5 * 60 * 1000

/** Who owns a run and for how long; shared by `openRun` and `resolveEffect`. */
export interface RunOwnerOptions {
  /** Lease holder; default `<hostname>:<pid>:<random>`. */
  readonly holder?: string
  /** Lease time-to-live; renewed by `heartbeat()` and whenever a record lease is taken. Default 5 minutes. */
  readonly leaseTtlMs?: number
  /**
   * An existing lease (for example a worker snapshot's, `worker.lease`) that
   * owns the run: the run's leases are taken by its holder and kept
   * subordinate to it, so one ownership covers both. The run never releases
   * it. Default: the run takes its own lease on its head record.
   */
  readonly parentLease?: Lease
  /** Clock for timestamps in records and the audit trail. Default `Date.now`. */
  readonly clock?: Clock
}

/** Throws `INVALID_RUN_ID` unless `id` is a valid id (see `ID_PATTERN`). */
export function assertRunId(id: unknown): asserts id is string {
  if (!isValidId(id)) {
    throw runtimeError(
      'INVALID_RUN_ID',
      'Invalid run id: use 1-128 of [A-Za-z0-9_.-], starting with a letter or digit',
      { runId: typeof id === 'string' ? id.slice(0, 200) : typeof id },
    )
  }
}

/** An attempt that holds the run: its ownership, head and the context for ledger writes. */
export interface OpenedAttempt {
  readonly ctx: LedgerContext
  head: RunHead
  headVersion: string
  /** Whether this attempt created the run. */
  readonly created: boolean
}

async function rootLease(backend: Backend, runId: string, options: RunOwnerOptions) {
  if (options.parentLease !== undefined) {
    const ownership = new RunOwnership(backend, options.parentLease, false)
    return { ownership, headLease: await ownership.leaseFor(runHeadKey(runId)) }
  }
  const ttlMs = options.leaseTtlMs ?? DEFAULT_RUN_LEASE_TTL_MS
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_LEASE_TTL_MS) {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `leaseTtlMs must be an integer from 1 to ${MAX_LEASE_TTL_MS}`,
    )
  }
  const holder = options.holder ?? `${hostname()}:${process.pid}:${uuidv7().slice(-12)}`
  try {
    const lease = await backend.acquireLease(runHeadKey(runId), { holder, ttlMs })
    return { ownership: new RunOwnership(backend, lease, true), headLease: lease }
  } catch (error) {
    if (isAgentStateError(error, 'LEASE_HELD')) {
      const expiresAt = error.context.expiresAt
      throw runtimeError(
        'RUN_OWNED',
        `Run ${runId} is owned by ${String(error.context.holder)} until ${typeof expiresAt === 'number' ? new Date(expiresAt).toISOString() : 'its lease expires'}`,
        { runId, holder: error.context.holder ?? null, expiresAt: expiresAt ?? null },
        error,
      )
    }
    throw error
  }
}

/**
 * An effect's record for the unknown index's repair; an unreadable one is left as it is
 * (still ambiguous, so every reader reads it and meets its error, and recovery stops on it).
 */
async function readForRepair(
  ctx: LedgerContext,
  effectId: string,
): Promise<EffectRecord | null | undefined> {
  try {
    return (await loadEffect(ctx.backend, ctx.runId, effectId, ctx.token))?.record ?? null
  } catch (error) {
    if (isAgentStateError(error) && error.code.startsWith('RUN_RECORD_')) return undefined
    throw error
  }
}

/** Reads and verifies the head, or `null` when the run does not exist. */
export async function loadHead(
  backend: Backend,
  runId: string,
): Promise<{ head: RunHead; version: string } | null> {
  const key = runHeadKey(runId)
  const found = await backend.get(key)
  if (found === null) return null
  const head = decodeRunRecord(found.value, 'run', runHeadSchema, key)
  if (head.runId !== runId) {
    throw runtimeError('RUN_RECORD_CONTRADICTORY', `The head record ${key} names another run`, {
      key,
      runId,
      storedRunId: head.runId,
    })
  }
  return { head, version: found.meta.version }
}

/** `head` plus audit entries, keeping the newest {@link MAX_RUN_AUDIT_ENTRIES}. */
export function withAudit(head: RunHead, entries: readonly RunAuditEntry[], now: string): RunHead {
  const audit = [...head.audit, ...entries]
  return {
    ...head,
    audit: audit.length > MAX_RUN_AUDIT_ENTRIES ? audit.slice(-MAX_RUN_AUDIT_ENTRIES) : audit,
    updatedAt: now,
  }
}

/** One audit entry by this attempt. */
export function auditEntry(
  ctx: LedgerContext,
  event: RunAuditEntry['event'],
  detail: Record<string, JsonValue>,
): RunAuditEntry {
  return { event, at: new Date(ctx.clock()).toISOString(), attemptId: ctx.attemptId, detail }
}

/** Stores the head with one fenced compare-and-set over the version this attempt last wrote. */
export async function storeHead(attempt: OpenedAttempt, head: RunHead): Promise<void> {
  const { ctx } = attempt
  const key = runHeadKey(ctx.runId)
  const lease = await ctx.ownership.leaseFor(key)
  const meta = await ctx.backend.put(key, encodeRunRecord('run', runHeadSchema, head), {
    ifMatch: attempt.headVersion,
    lease,
    writer: { writerId: lease.holder },
  })
  attempt.head = head
  attempt.headVersion = meta.version
}

/**
 * Takes the run's lease and records a new attempt on its head (created when
 * `create` and the run does not exist). The attempt id is the run id plus
 * the lease's fencing token, so attempts are stable, unique and ordered.
 *
 * @throws `RUN_OWNED` (a live owner), `RUN_NOT_FOUND`, `RUN_RECORD_*`.
 */
export async function beginAttempt(
  backend: Backend,
  runId: string,
  options: RunOwnerOptions,
  create: boolean,
): Promise<OpenedAttempt> {
  assertRunId(runId)
  const clock = options.clock ?? systemClock
  const { ownership, headLease } = await rootLease(backend, runId, options)
  try {
    const token = headLease.token
    const ctx: LedgerContext = {
      backend,
      runId,
      ownership,
      attemptId: `${runId}@${token}`,
      token,
      clock,
    }
    const now = new Date(clock()).toISOString()
    const attemptRecord = {
      attemptId: ctx.attemptId,
      token,
      holder: headLease.holder,
      startedAt: now,
    }
    const stored = await loadHead(backend, runId)
    const key = runHeadKey(runId)
    const writer = { writerId: headLease.holder }
    if (stored === null) {
      if (!create) throw runtimeError('RUN_NOT_FOUND', `Run ${runId} does not exist`, { runId })
      const head: RunHead = {
        runId,
        status: 'open',
        attempt: attemptRecord,
        attemptCount: 1,
        createdAt: now,
        updatedAt: now,
        audit: [auditEntry(ctx, 'run_created', { holder: headLease.holder })],
        unknownIndex: true,
      }
      const meta = await backend.put(key, encodeRunRecord('run', runHeadSchema, head), {
        ifNoneMatch: '*',
        lease: headLease,
        writer,
      })
      return { ctx, head, headVersion: meta.version, created: true }
    }
    if (stored.head.attempt.token >= token) {
      throw runtimeError(
        'RUN_RECORD_CONTRADICTORY',
        `Run ${runId} records attempt ${stored.head.attempt.attemptId}, newer than the lease just taken (token ${token})`,
        { runId, storedToken: stored.head.attempt.token, token },
      )
    }
    // Owned now (the lease), before the head names this attempt: the index of unknown effects
    // is made true before anything reads or moves an effect (a crash window of the last
    // owner), or built for a run written before it; so a head saying `unknownIndex` is true.
    await repairUnknownIndex(
      ctx,
      (effectId) => readForRepair(ctx, effectId),
      stored.head.unknownIndex !== true,
    )
    const head = withAudit(
      {
        ...stored.head,
        attempt: attemptRecord,
        attemptCount: stored.head.attemptCount + 1,
        unknownIndex: true,
      },
      [
        auditEntry(ctx, 'attempt_started', {
          holder: headLease.holder,
          previousAttemptId: stored.head.attempt.attemptId,
        }),
      ],
      now,
    )
    const meta = await backend.put(key, encodeRunRecord('run', runHeadSchema, head), {
      ifMatch: stored.version,
      lease: headLease,
      writer,
    })
    return { ctx, head, headVersion: meta.version, created: false }
  } catch (error) {
    await ownership.release()
    throw error
  }
}
