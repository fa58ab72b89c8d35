import { AgentStateError } from '@agent-state/core'

/**
 * Where a saver keeps each record, under its `prefix`:
 *
 * ```
 * <prefix>/t<thread>/owner                              thread head (ownership mode only; the leased key)
 * <prefix>/t<thread>/n<ns>/c/<inv(id)>~/m               the checkpoint's record (format 2: metadata, body and
 *                                                       the channel values it introduced; format 1: metadata)
 * <prefix>/t<thread>/n<ns>/c/<inv(id)>~/b               format 1 only: checkpoint body (without channel values)
 * <prefix>/t<thread>/n<ns>/c/<inv(id)>~/w/<task>/<idx>.<token>   one pending write
 * <prefix>/t<thread>/n<ns>/v/<channel>/<version>        one channel value: format 1, or copied out of a
 *                                                       pruned format-2 record that a kept checkpoint needs
 * ```
 *
 * Thread ids, namespaces, task ids, channels and versions are
 * percent-encoded (`encodeURIComponent`) behind a letter, so every segment is
 * valid and none is `.`/`..`. Checkpoint ids are stored inverted: each UTF-8
 * byte as the hex of its complement, then `~` (above every hex digit), so
 * ascending byte order of keys is descending order of ids, which lets a
 * listing page yield the newest checkpoint first. Everything of a thread
 * lives under `<prefix>/t<thread>/`, so deleting that prefix leaves nothing.
 */
export interface CheckpointKeys {
  /** The checkpoint's record (format 2), or its metadata record (format 1). */
  readonly meta: string
  /** Format 1 only: the body record. */
  readonly body: string
  /** Prefix of the checkpoint's pending writes. */
  readonly writes: string
}

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/** Percent-encodes one id into a key segment (behind `letter`); an unpaired surrogate is `INVALID_ARGUMENT`. */
export function encodeSegment(letter: string, text: string, what: string): string {
  try {
    return `${letter}${encodeURIComponent(text)}`
  } catch (error) {
    throw new AgentStateError('INVALID_ARGUMENT', `The ${what} is not well-formed UTF-16`, {
      cause: error,
    })
  }
}

/** Inverse of {@link encodeSegment}; a segment this layout did not write is `CORRUPT`. */
export function decodeSegment(letter: string, segment: string, key: string): string {
  if (!segment.startsWith(letter)) {
    throw new AgentStateError('CORRUPT', 'A key under the LangGraph prefix has an unknown layout', {
      context: { key },
    })
  }
  try {
    return decodeURIComponent(segment.slice(1))
  } catch (error) {
    throw new AgentStateError('CORRUPT', 'A key under the LangGraph prefix is not decodable', {
      context: { key },
      cause: error,
    })
  }
}

/** The order-inverting encoding of a checkpoint id (see the layout above). */
export function invertId(id: string): string {
  let out = ''
  for (const byte of encoder.encode(id)) out += INVERTED_HEX[byte]
  return `${out}~`
}

/** `INVERTED_HEX[byte]`: the two lowercase hex digits of `255 - byte` (a table: ids are inverted per listed key). */
const INVERTED_HEX = Array.from({ length: 256 }, (_, byte) =>
  (255 - byte).toString(16).padStart(2, '0'),
)

/** The value of a lowercase hex digit's char code (`revertId` checked the digits first). */
function hexDigit(code: number): number {
  return code <= 57 ? code - 48 : code - 87
}

/** Inverse of {@link invertId}. */
export function revertId(segment: string, key: string): string {
  if (!/^(?:[0-9a-f]{2})*~$/.test(segment)) {
    throw new AgentStateError('CORRUPT', 'A checkpoint key has an unknown layout', {
      context: { key },
    })
  }
  const bytes = new Uint8Array((segment.length - 1) / 2)
  for (let i = 0; i < bytes.length; i++) {
    bytes[i] =
      255 - ((hexDigit(segment.charCodeAt(2 * i)) << 4) | hexDigit(segment.charCodeAt(2 * i + 1)))
  }
  try {
    return decoder.decode(bytes)
  } catch (error) {
    throw new AgentStateError('CORRUPT', 'A checkpoint key is not decodable', {
      context: { key },
      cause: error,
    })
  }
}

/** The key builder of one saver. */
export class KeyLayout {
  /** `prefix`: a valid backend key without a trailing `/`. */
  constructor(readonly prefix: string) {}

  /** Prefix of every thread. */
  threadsPrefix(): string {
    return `${this.prefix}/`
  }

  /** Prefix of every record of a thread (what `deleteThread` removes). */
  thread(threadId: string): string {
    return `${this.prefix}/${encodeSegment('t', threadId, 'thread_id')}/`
  }

  /** The thread id of a `<prefix>/t<thread>/` group from a delimited listing. */
  threadIdOf(threadPrefix: string): string {
    return decodeSegment('t', threadPrefix.slice(this.prefix.length + 1, -1), threadPrefix)
  }

  /** The thread head: leased by the owner in ownership mode. */
  owner(threadId: string): string {
    return `${this.thread(threadId)}owner`
  }

  /** Prefix of one checkpoint namespace of a thread. */
  namespace(threadId: string, ns: string): string {
    return `${this.thread(threadId)}${encodeSegment('n', ns, 'checkpoint_ns')}/`
  }

  /** The namespace of a `<thread>/n<ns>/` prefix, or `undefined` for another record (`owner`). */
  namespaceOf(threadPrefix: string, childPrefix: string): string | undefined {
    const segment = childPrefix.slice(threadPrefix.length, -1)
    return segment.startsWith('n') ? decodeSegment('n', segment, childPrefix) : undefined
  }

  /** Prefix under which each checkpoint is one `<inv(id)>/` group, newest first. */
  checkpointsPrefix(threadId: string, ns: string): string {
    return `${this.namespace(threadId, ns)}c/`
  }

  /** The keys of one checkpoint. */
  checkpoint(threadId: string, ns: string, checkpointId: string): CheckpointKeys {
    return this.checkpointUnder(`${this.checkpointsPrefix(threadId, ns)}${invertId(checkpointId)}/`)
  }

  /**
   * The record keys of the checkpoint whose prefix (`<...>/c/<inv>/`) a
   * listing found: {@link KeyLayout.checkpoint} without decoding and
   * encoding its id again.
   */
  checkpointUnder(base: string): CheckpointKeys {
    return { meta: `${base}m`, body: `${base}b`, writes: `${base}w/` }
  }

  /** The checkpoint id of a `<...>/c/<inv>/` prefix from a delimited listing. */
  checkpointIdOf(checkpointsPrefix: string, childPrefix: string): string {
    return revertId(childPrefix.slice(checkpointsPrefix.length, -1), childPrefix)
  }

  /** The key of one pending write: per task, index and (in ownership mode) the writer's fencing token. */
  write(keys: CheckpointKeys, taskId: string, idx: number, token: number): string {
    return `${keys.writes}${encodeSegment('k', taskId, 'task id')}/${idx}.${token}`
  }

  /** Prefix of a namespace's channel values. */
  blobsPrefix(threadId: string, ns: string): string {
    return `${this.namespace(threadId, ns)}v/`
  }

  /** The key of one channel value at one version. */
  blob(threadId: string, ns: string, channel: string, version: string | number): string {
    return `${this.blobsPrefix(threadId, ns)}${encodeSegment('c', channel, 'channel')}/${encodeSegment('v', String(version), 'channel version')}`
  }
}
