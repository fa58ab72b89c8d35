import {
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  copyCheckpoint,
  type PendingWrite,
  type SerializerProtocol,
  WRITES_IDX_MAP,
} from '@langchain/langgraph-checkpoint'
import type { KeyLayout } from './key-layout.js'
import type { PendingRecord } from './limits.js'
import { encodeRecord } from './record-codec.js'
import type { OwnerStamp } from './records.js'

/** The records of one `put`: channel values and body (written first), and the metadata record (last). */
export interface CheckpointRecords {
  readonly id: string
  /** Channel values in `newVersions`, then the body. */
  readonly parts: PendingRecord[]
  /** The metadata record, stamped in ownership mode. */
  meta(stamp: OwnerStamp | undefined): PendingRecord
}

/** Serializes a checkpoint into its records; only channels in `newVersions` get a value record. */
export async function buildCheckpointRecords(
  serde: SerializerProtocol,
  layout: KeyLayout,
  target: { threadId: string; ns: string; parentId: string | null },
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata,
  newVersions: ChannelVersions,
): Promise<CheckpointRecords> {
  const { threadId, ns, parentId } = target
  const copy = copyCheckpoint(checkpoint)
  const keys = layout.checkpoint(threadId, ns, copy.id)
  const values = copy.channel_values
  const [[bodyType, body], [metaType, meta]] = await Promise.all([
    serde.dumpsTyped({ ...copy, channel_values: {} }),
    serde.dumpsTyped(metadata),
  ])
  const parts: PendingRecord[] = await Promise.all(
    Object.entries(newVersions).map(async ([channel, version]) => {
      const [type, payload] =
        channel in values ? await serde.dumpsTyped(values[channel]) : ['empty', new Uint8Array(0)]
      return {
        key: layout.blob(threadId, ns, channel, version),
        value: encodeRecord({ k: 'v', t: type }, payload),
      }
    }),
  )
  parts.push({ key: keys.body, value: encodeRecord({ k: 'b', ct: bodyType }, body) })
  return {
    id: copy.id,
    parts,
    meta: (stamp) => ({
      key: keys.meta,
      value: encodeRecord(
        stamp === undefined
          ? { k: 'm', id: copy.id, parent: parentId, mt: metaType }
          : { k: 'm', id: copy.id, parent: parentId, mt: metaType, o: stamp },
        meta,
      ),
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
