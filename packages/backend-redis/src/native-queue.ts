import { isUtf8 } from 'node:buffer'
import {
  AgentStateError,
  assertLeaseShape,
  assertValidKey,
  type NativeQueue,
  type NativeQueueCapability,
  type NativeQueueKeys,
  randomSuffix,
} from '@agent-state/core'
import { checkGrant, type PromotionHold } from './lease-operations.js'
import type { OperationContext } from './operation-context.js'
import { QUEUE_APPEND, QUEUE_CLAIM, QUEUE_SETTLE } from './queue-scripts.js'
import {
  corrupt,
  leaseIdOf,
  named,
  REPLY,
  reply,
  throwWriteFailure,
  toNumber,
} from './script-replies.js'

/**
 * The head record's bytes as a script argument: as a string when they are UTF-8 (the runtime's
 * JSON always is), which the Redis client writes on its string path, about 5 µs of client CPU
 * less per settle than a command built around a Buffer (17.6 against 22.6 µs per EVALSHA, ioredis
 * 5, load 9); the server stores the same bytes. Anything else goes as the bytes themselves.
 */
function headArgument(head: Uint8Array): string | Buffer {
  const bytes = Buffer.from(head.buffer, head.byteOffset, head.byteLength)
  return isUtf8(bytes) ? bytes.toString('utf8') : bytes
}

/** What this backend claims as `capabilities.nativeQueue`. */
export const REDIS_NATIVE_QUEUE: NativeQueueCapability = { version: 1 }

/**
 * The native daemon queue of one backend instance: each operation is one
 * script (`queue-scripts.ts`) run through `ctx.mutate`, so under
 * `replication` it is confirmed by `WAIT` like every other write.
 */
export function nativeQueueOperations(ctx: OperationContext, hold: PromotionHold): NativeQueue {
  const { layout, capabilities } = ctx
  /** The keys `checkKeys` last found valid: a queue handle passes the same ones every time. */
  let checked: NativeQueueKeys | undefined
  /** Checks the queue's keys as every operation checks its key; the widest event key too. */
  function checkKeys(keys: NativeQueueKeys): void {
    ctx.assertOpen()
    if (
      checked !== undefined &&
      keys.head === checked.head &&
      keys.tail === checked.tail &&
      keys.eventPrefix === checked.eventPrefix &&
      keys.eventDigits === checked.eventDigits
    ) {
      return
    }
    assertValidKey(keys.head, capabilities.maxKeyBytes)
    assertValidKey(keys.tail, capabilities.maxKeyBytes)
    assertValidKey(`${keys.eventPrefix}${'9'.repeat(keys.eventDigits)}`, capabilities.maxKeyBytes)
    checked = { ...keys }
  }
  /** A script's `QUEUE_CORRUPT` reply (a head or tail record that does not decode, a missing event). */
  function queueFailure(
    r: readonly string[],
    key: string,
    lease: Parameters<typeof throwWriteFailure>[2],
  ): never {
    if (r[0] === 'QUEUE_CORRUPT')
      throw corrupt(r[1] ?? key, 'daemon queue record missing or unreadable')
    throwWriteFailure(key, r, lease)
  }
  return {
    async queueAppend(keys, append) {
      checkKeys(keys)
      if (append.events.length === 0) {
        throw new AgentStateError('INVALID_ARGUMENT', 'queueAppend needs at least one event')
      }
      const r = reply(
        await ctx.mutate(
          QUEUE_APPEND,
          'queueAppend',
          keys.tail,
          [layout.record(keys.tail), layout.record(keys.head), layout.index, layout.records],
          [
            keys.tail,
            String(append.capacity),
            append.mode,
            layout.recordPrefix,
            keys.eventPrefix,
            String(keys.eventDigits),
            layout.changes,
            randomSuffix(),
            ...append.events,
          ],
        ),
        keys.tail,
      )
      if (r[0] !== 'OK') queueFailure(r, keys.tail, undefined)
      const f = named(keys.tail, r, REPLY.queueAppend)
      return {
        first: toNumber(keys.tail, f.first, 'next'),
        stored: toNumber(keys.tail, f.stored, 'stored'),
      }
    },

    async queueClaim(keys, claim) {
      checkKeys(keys)
      const holdArgs = checkGrant(ctx, hold, keys.head, {
        holder: claim.holder,
        ttlMs: claim.ttlMs,
      })
      const previous = claim.previous
      if (previous !== undefined) assertLeaseShape(previous.lease)
      const r = reply(
        await ctx.mutate(
          QUEUE_CLAIM,
          'queueClaim',
          keys.head,
          [
            layout.record(keys.head),
            layout.record(keys.tail),
            layout.records,
            layout.meta,
            layout.index,
          ],
          [
            keys.head,
            claim.holder,
            String(claim.ttlMs),
            randomSuffix() + randomSuffix(),
            ...holdArgs,
            claim.claimedAt,
            layout.recordPrefix,
            keys.eventPrefix,
            String(keys.eventDigits),
            randomSuffix(),
            layout.changes,
            previous === undefined ? '' : String(previous.lease.token),
            leaseIdOf(previous?.lease),
            previous?.headVersion ?? '',
            previous === undefined ? '' : String(previous.seq),
          ],
        ),
        keys.head,
      )
      // EMPTY wrote nothing; OK ACKED acknowledged `previous` and found nothing more.
      if (r[0] === 'EMPTY' || (r[0] === 'OK' && r[1] === 'ACKED')) return null
      if (r[0] !== 'OK') queueFailure(r, keys.head, previous?.lease)
      const f = named(keys.head, r, REPLY.queueClaim)
      return {
        event: Buffer.from(f.event, 'utf8'),
        head: Buffer.from(f.head, 'utf8'),
        headVersion: f.headVersion,
        lease: {
          key: keys.head,
          holder: f.holder,
          token: toNumber(keys.head, f.token, 'lt'),
          ttlMs: toNumber(keys.head, f.ttlMs, 'lttl'),
          expiresAt: toNumber(keys.head, f.expiresAt, 'le'),
          leaseId: f.leaseId,
        },
      }
    },

    async queueSettle(keys, settle) {
      checkKeys(keys)
      assertLeaseShape(settle.lease)
      if (settle.removeEvent !== null) assertValidKey(settle.removeEvent, capabilities.maxKeyBytes)
      const r = reply(
        await ctx.mutate(
          QUEUE_SETTLE,
          'queueSettle',
          keys.head,
          [layout.record(keys.head), layout.index, layout.records],
          [
            keys.head,
            headArgument(settle.head),
            String(settle.lease.token),
            leaseIdOf(settle.lease),
            settle.headVersion,
            settle.removeEvent ?? '',
            layout.recordPrefix,
            randomSuffix(),
            layout.changes,
          ],
        ),
        keys.head,
      )
      if (r[0] !== 'OK') queueFailure(r, keys.head, settle.lease)
    },
  }
}
