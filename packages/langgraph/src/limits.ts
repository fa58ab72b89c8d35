import { AgentStateError, assertValidKey, type Backend, utf8ByteLength } from '@agent-state/core'

/** One record a call is about to write. */
export interface PendingRecord {
  readonly key: string
  readonly value: Uint8Array
}

/**
 * Checks every record of one call against the backend's key rules and
 * `maxKeyBytes` / `maxValueBytes` before the first is written, so a
 * checkpoint too large for the backend fails whole, with nothing stored.
 */
export function assertFits(
  backend: Backend,
  records: readonly PendingRecord[],
  context: Readonly<Record<string, unknown>>,
): void {
  const { maxKeyBytes, maxValueBytes } = backend.capabilities
  for (const { key, value } of records) {
    assertValidKey(key)
    if (utf8ByteLength(key) > maxKeyBytes) {
      throw new AgentStateError(
        'INVALID_KEY',
        `A LangGraph key is longer than the ${backend.name} backend allows (${maxKeyBytes} bytes); use shorter thread, namespace, task or channel ids`,
        { context: { ...context, key, maxKeyBytes } },
      )
    }
    if (value.length > maxValueBytes) {
      throw new AgentStateError(
        'VALUE_TOO_LARGE',
        `A LangGraph record of ${value.length} bytes is over the ${backend.name} backend's limit of ${maxValueBytes} bytes; nothing was written`,
        { context: { ...context, key, size: value.length, maxValueBytes } },
      )
    }
  }
}
