/** Owner stamp of a record written in ownership mode: `[fencing token, sequence number]`. */
export type OwnerStamp = readonly [token: number, seq: number]

/** Header of a checkpoint's metadata record; the payload is the serialized metadata. */
export interface MetaHeader {
  readonly k: 'm'
  readonly id: string
  readonly parent: string | null
  /** Serializer type of the metadata payload. */
  readonly mt: string
  readonly o?: OwnerStamp
}

/**
 * Header of a checkpoint record (format 2, at the metadata key `m`): one
 * record holds the metadata, the body and the values of the channels this
 * checkpoint introduced. The payload is the serialized metadata (`ml`
 * bytes), the serialized body without channel values (`bl` bytes), then each
 * value of `vals` in order. A channel of the body's `channel_versions` not in
 * `vals` is read from the record of checkpoint `from[channel]` (the one that
 * introduced that version), or, when that record is gone (pruned) or not
 * named, from the format-1 channel value key `v/<channel>/<version>`.
 */
export interface CheckpointHeader {
  readonly k: 'c'
  readonly id: string
  readonly parent: string | null
  /** Serializer type of the metadata payload. */
  readonly mt: string
  /** Byte length of the metadata payload. */
  readonly ml: number
  /** Serializer type of the body. */
  readonly ct: string
  /** Byte length of the body. */
  readonly bl: number
  /** Inline channel values: `[channel, version, serializer type ("empty": no value), byte length]`. */
  readonly vals: ReadonlyArray<
    readonly [channel: string, version: string, type: string, length: number]
  >
  /** Channel → `[id of the checkpoint whose record holds its value, version]`, for inherited channels. */
  readonly from: Readonly<Record<string, readonly [holder: string, version: string]>>
  readonly o?: OwnerStamp
}

/** Header of a checkpoint body; the payload is the serialized checkpoint without channel values. */
export interface BodyHeader {
  readonly k: 'b'
  readonly ct: string
}

/** Header of one channel value; `t: "empty"` marks a channel that had no value at that version. */
export interface BlobHeader {
  readonly k: 'v'
  readonly t: string
}

/** Header of one pending write; the payload is the serialized value. */
export interface WriteHeader {
  readonly k: 'w'
  readonly task: string
  readonly path: string
  readonly idx: number
  readonly ch: string
  readonly t: string
  readonly o?: OwnerStamp
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null

const isStamp = (value: unknown): boolean =>
  value === undefined ||
  (Array.isArray(value) &&
    value.length === 2 &&
    value.every((part) => Number.isSafeInteger(part) && (part as number) >= 0))

/** Whether `value` is a {@link MetaHeader}. */
export function isMetaHeader(value: unknown): value is MetaHeader {
  return (
    isObject(value) &&
    value.k === 'm' &&
    typeof value.id === 'string' &&
    (value.parent === null || typeof value.parent === 'string') &&
    typeof value.mt === 'string' &&
    isStamp(value.o)
  )
}

const isLength = (value: unknown): boolean => Number.isSafeInteger(value) && (value as number) >= 0

/** Whether `value` is a {@link CheckpointHeader}. */
export function isCheckpointHeader(value: unknown): value is CheckpointHeader {
  return (
    isObject(value) &&
    value.k === 'c' &&
    typeof value.id === 'string' &&
    (value.parent === null || typeof value.parent === 'string') &&
    typeof value.mt === 'string' &&
    isLength(value.ml) &&
    typeof value.ct === 'string' &&
    isLength(value.bl) &&
    Array.isArray(value.vals) &&
    value.vals.every(
      (entry) =>
        Array.isArray(entry) &&
        entry.length === 4 &&
        typeof entry[0] === 'string' &&
        typeof entry[1] === 'string' &&
        typeof entry[2] === 'string' &&
        isLength(entry[3]),
    ) &&
    isObject(value.from) &&
    Object.values(value.from).every(
      (source) =>
        Array.isArray(source) &&
        source.length === 2 &&
        typeof source[0] === 'string' &&
        typeof source[1] === 'string',
    ) &&
    isStamp(value.o)
  )
}

/** Whether `value` is a format-1 {@link MetaHeader} or a format-2 {@link CheckpointHeader}. */
export function isRecordHeader(value: unknown): value is MetaHeader | CheckpointHeader {
  return isMetaHeader(value) || isCheckpointHeader(value)
}

/** Whether `value` is a {@link BodyHeader}. */
export function isBodyHeader(value: unknown): value is BodyHeader {
  return isObject(value) && value.k === 'b' && typeof value.ct === 'string'
}

/** Whether `value` is a {@link BlobHeader}. */
export function isBlobHeader(value: unknown): value is BlobHeader {
  return isObject(value) && value.k === 'v' && typeof value.t === 'string'
}

/** Whether `value` is a {@link WriteHeader}. */
export function isWriteHeader(value: unknown): value is WriteHeader {
  return (
    isObject(value) &&
    value.k === 'w' &&
    typeof value.task === 'string' &&
    typeof value.path === 'string' &&
    Number.isSafeInteger(value.idx) &&
    typeof value.ch === 'string' &&
    typeof value.t === 'string' &&
    isStamp(value.o)
  )
}
