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
