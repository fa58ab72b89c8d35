import { AgentStateError } from '@agent-state/core'
import { BoundedCache } from './bounded-cache.js'
import type { KeyLayout } from './key-layout.js'
import type { PendingRecord } from './limits.js'
import { decodeRecord, encodeRecord } from './record-codec.js'
import { type CheckpointHeader, isRecordHeader, type MetaHeader } from './records.js'

/** One channel value held inline by a format-2 checkpoint record. */
export interface InlineValue {
  readonly version: string
  /** Serializer type; `"empty"`: the channel had no value at that version. */
  readonly type: string
  readonly payload: Uint8Array
}

/** What a format-2 record holds beside its metadata. */
export interface InlineParts {
  /** Serializer type of the body. */
  readonly ct: string
  /** The serialized checkpoint without channel values. */
  readonly body: Uint8Array
  /** The channel values this checkpoint introduced, by channel. */
  readonly values: ReadonlyMap<string, InlineValue>
  /** Inherited channels: where their value lives (see `CheckpointHeader.from`). */
  readonly from: CheckpointHeader['from']
}

/**
 * A checkpoint's record at its metadata key, decoded: format 1 (metadata
 * only; body and channel values are records of their own) or format 2
 * (everything in `inline`). `payload` is the serialized metadata either way.
 */
export interface StoredMeta {
  readonly header: MetaHeader | CheckpointHeader
  readonly payload: Uint8Array
  readonly inline?: InlineParts
}

/** Decodes the record at a checkpoint's metadata key; lengths that do not add up are `CORRUPT`. */
export function decodeCheckpointRecord(bytes: Uint8Array, key: string): StoredMeta {
  const { header, payload } = decodeRecord(bytes, key, isRecordHeader)
  if (header.k === 'm') return { header, payload }
  const total = header.vals.reduce((sum, entry) => sum + entry[3], header.ml + header.bl)
  if (total !== payload.length) {
    throw new AgentStateError('CORRUPT', 'A LangGraph record is damaged: lengths do not add up', {
      context: { key },
    })
  }
  const values = new Map<string, InlineValue>()
  let offset = header.ml + header.bl
  for (const [channel, version, type, length] of header.vals) {
    values.set(channel, { version, type, payload: payload.subarray(offset, offset + length) })
    offset += length
  }
  return {
    header,
    payload: payload.subarray(0, header.ml),
    inline: {
      ct: header.ct,
      body: payload.subarray(header.ml, header.ml + header.bl),
      values,
      from: header.from,
    },
  }
}

/** Encodes the payload of a format-2 record: metadata, body, then the inline values in header order. */
export function checkpointPayload(
  metadata: Uint8Array,
  body: Uint8Array,
  values: readonly Uint8Array[],
): Uint8Array {
  const parts = [metadata, body, ...values]
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

/**
 * Where each channel value of one checkpoint lives: channel → `[holder
 * checkpoint id, version]`. A format-1 checkpoint has none (its values are
 * `v/` records), so a child of it reads them from there.
 */
export type ChannelSources = ReadonlyMap<string, readonly [holder: string, version: string]>

/** The {@link ChannelSources} of a decoded checkpoint record. */
export function sourcesOf(stored: StoredMeta): ChannelSources {
  const sources = new Map<string, readonly [string, string]>()
  if (stored.inline === undefined) return sources
  for (const [channel, source] of Object.entries(stored.inline.from)) sources.set(channel, source)
  for (const [channel, value] of stored.inline.values) {
    sources.set(channel, [stored.header.id, value.version])
  }
  return sources
}

/**
 * The channel sources of the checkpoints this saver wrote or read last, by
 * metadata key (records never change, so an entry never goes stale; a
 * deleted holder falls back to the `v/` key). It spares `put` the read of
 * its parent: a graph's next checkpoint names the one it just wrote or loaded.
 */
export class SourceCache extends BoundedCache<ChannelSources> {}

/**
 * The channel values that kept format-2 checkpoints inherit from records
 * about to be removed, as `v/...` records: written before any removal, they
 * are where a kept checkpoint's reader falls back once the holder is gone.
 */
export function spilledValues(
  layout: KeyLayout,
  threadId: string,
  ns: string,
  kept: readonly StoredMeta[],
  removed: ReadonlyMap<string, StoredMeta>,
): PendingRecord[] {
  const spills = new Map<string, Uint8Array>()
  for (const meta of kept) {
    for (const [channel, [holder, version]] of Object.entries(meta.inline?.from ?? {})) {
      const value = removed.get(holder)?.inline?.values.get(channel)
      if (value?.version !== version) continue
      spills.set(
        layout.blob(threadId, ns, channel, version),
        encodeRecord({ k: 'v', t: value.type }, value.payload),
      )
    }
  }
  return [...spills].map(([key, value]) => ({ key, value }))
}
