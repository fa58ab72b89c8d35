import {
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  copyCheckpoint,
  type PendingWrite,
  type SerializerProtocol,
  WRITES_IDX_MAP,
} from '@langchain/langgraph-checkpoint'
import { type ChannelSources, checkpointPayload } from './checkpoint-record.js'
import type { KeyLayout } from './key-layout.js'
import type { PendingRecord } from './limits.js'
import { encodeRecord } from './record-codec.js'
import type { OwnerStamp } from './records.js'

/** The record of one `put`: metadata, body and the channel values it introduced, in one write. */
export interface CheckpointRecord {
  readonly id: string
  /** Where each of this checkpoint's channel values lives (for its children's `put`). */
  readonly sources: ChannelSources
  /** The record, stamped in ownership mode. */
  record(stamp: OwnerStamp | undefined): PendingRecord
}

/**
 * A checkpoint serialized: its body (without channel values), its metadata
 * and the channels of `newVersions` (`"empty"` for one without a value),
 * whatever record format then holds them.
 */
export async function serializeCheckpoint(
  serde: SerializerProtocol,
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata,
  newVersions: ChannelVersions,
) {
  const copy = copyCheckpoint(checkpoint)
  const values = copy.channel_values
  const [[bodyType, body], [metaType, meta], inline] = await Promise.all([
    serde.dumpsTyped({ ...copy, channel_values: {} }),
    serde.dumpsTyped(metadata),
    Promise.all(
      Object.entries(newVersions).map(async ([channel, version]) => {
        const [type, payload] =
          channel in values ? await serde.dumpsTyped(values[channel]) : ['empty', new Uint8Array(0)]
        return { channel, version: String(version), type, payload }
      }),
    ),
  ])
  return { copy, bodyType, body, metaType, meta, inline }
}

/**
 * Serializes a checkpoint into its one format-2 record. Channels in
 * `newVersions` are stored inline; every other channel of its
 * `channel_versions` is named by where its value lives, taken from
 * `parentSources` when the parent holds the same version (else the reader
 * falls back to the format-1 `v/` key, as for a parent of format 1).
 */
export async function buildCheckpointRecord(
  serde: SerializerProtocol,
  layout: KeyLayout,
  target: { threadId: string; ns: string; parentId: string | null },
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata,
  newVersions: ChannelVersions,
  parentSources: ChannelSources,
): Promise<CheckpointRecord> {
  const { threadId, ns, parentId } = target
  const { copy, bodyType, body, metaType, meta, inline } = await serializeCheckpoint(
    serde,
    checkpoint,
    metadata,
    newVersions,
  )
  const key = layout.checkpoint(threadId, ns, copy.id).meta
  const sources = new Map<string, readonly [string, string]>()
  const from: Record<string, readonly [string, string]> = {}
  for (const [channel, version] of Object.entries(copy.channel_versions ?? {})) {
    if (channel in newVersions) continue
    const source = parentSources.get(channel)
    if (source === undefined || source[1] !== String(version)) continue
    from[channel] = source
    sources.set(channel, source)
  }
  for (const value of inline) sources.set(value.channel, [copy.id, value.version])
  const payload = checkpointPayload(
    meta,
    body,
    inline.map((value) => value.payload),
  )
  const header = {
    k: 'c',
    id: copy.id,
    parent: parentId,
    mt: metaType,
    ml: meta.length,
    ct: bodyType,
    bl: body.length,
    vals: inline.map((value) => [value.channel, value.version, value.type, value.payload.length]),
    from,
  }
  return {
    id: copy.id,
    sources,
    record: (stamp) => ({
      key,
      value: encodeRecord(stamp === undefined ? header : { ...header, o: stamp }, payload, 2),
    }),
  }
}

/** One pending-write record with its LangGraph index (negative for special channels). */
export interface WriteRecord extends PendingRecord {
  readonly idx: number
}

/** Serializes one `putWrites` call; `build(stamp)` gives its records (keys carry the stamp's token). */
export async function buildWriteRecords(
  serde: SerializerProtocol,
  layout: KeyLayout,
  target: { threadId: string; ns: string; checkpointId: string },
  writes: readonly PendingWrite[],
  taskId: string,
  taskPath: string | undefined,
): Promise<(stamp: OwnerStamp | undefined) => WriteRecord[]> {
  const keys = layout.checkpoint(target.threadId, target.ns, target.checkpointId)
  const serialized = await Promise.all(
    writes.map(async ([channel, value], index) => {
      const [type, payload] = await serde.dumpsTyped(value)
      const idx = (WRITES_IDX_MAP as Record<string, number>)[channel] ?? index
      return { channel, idx, type, payload }
    }),
  )
  return (stamp) =>
    serialized.map(({ channel, idx, type, payload }) => {
      const header = { k: 'w', task: taskId, path: taskPath ?? '', idx, ch: channel, t: type }
      return {
        idx,
        key: layout.write(keys, taskId, idx, stamp?.[0] ?? 0),
        value: encodeRecord(stamp === undefined ? header : { ...header, o: stamp }, payload),
      }
    })
}
