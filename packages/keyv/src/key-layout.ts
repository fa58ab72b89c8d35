import { AgentStateError } from '@agent-state/core'

/**
 * How Keyv keys map to backend keys. Keyv hands the store keys already
 * prefixed with its namespace (`"<namespace>:<key>"`); the store splits the
 * namespace off so that each namespace is one backend prefix, which is what
 * makes `clear()` and iteration touch only their own namespace.
 *
 * Layout: `<prefix>/n<namespace>/k<key>`, each part percent-encoded
 * (`encodeURIComponent`), so any Keyv key is a valid backend key: no `/`,
 * no control character, no `.`/`..` segment (every segment starts with a letter).
 * Keys written without a namespace live under the segment `_`.
 */
export interface KeyLayout {
  /** The backend key of a Keyv key (as Keyv passes it, namespace-prefixed). */
  toBackendKey(keyvKey: string, namespace: string | undefined): string
  /** The Keyv key (namespace-prefixed, as Keyv expects it back) of a backend key. */
  toKeyvKey(backendKey: string): string
  /** The backend prefix holding every key of `namespace`. */
  namespacePrefix(namespace: string | undefined): string
}

const NO_NAMESPACE = '_'

function encode(text: string, what: string): string {
  try {
    return encodeURIComponent(text)
  } catch (error) {
    // Only an unpaired surrogate makes encodeURIComponent throw.
    throw new AgentStateError('INVALID_KEY', `The Keyv ${what} is not well-formed UTF-16`, {
      cause: error,
    })
  }
}

/** Builds the layout under `prefix` (a valid backend key prefix without a trailing `/`). */
export function createKeyLayout(prefix: string): KeyLayout {
  const namespaceSegment = (namespace: string | undefined): string =>
    namespace === undefined || namespace === ''
      ? NO_NAMESPACE
      : `n${encode(namespace, 'namespace')}`
  return {
    namespacePrefix: (namespace) => `${prefix}/${namespaceSegment(namespace)}/`,
    toBackendKey(keyvKey, namespace) {
      const marker = namespace === undefined || namespace === '' ? undefined : `${namespace}:`
      const bare = marker !== undefined && keyvKey.startsWith(marker)
      // A key that does not carry the namespace (Keyv's useKeyPrefix: false) is still stored
      // in the namespace, whole, so clear() and iteration stay scoped.
      const rest = bare ? keyvKey.slice(marker.length) : keyvKey
      return `${prefix}/${namespaceSegment(namespace)}/k${encode(rest, 'key')}`
    },
    toKeyvKey(backendKey) {
      const tail = backendKey.slice(prefix.length + 1)
      const slash = tail.indexOf('/')
      const nsSegment = tail.slice(0, slash)
      const keySegment = tail.slice(slash + 1)
      if (slash < 0 || !keySegment.startsWith('k')) {
        throw new AgentStateError('CORRUPT', 'A key under the Keyv prefix has an unknown layout', {
          context: { key: backendKey },
        })
      }
      const key = decodeURIComponent(keySegment.slice(1))
      if (nsSegment === NO_NAMESPACE) return key
      return `${decodeURIComponent(nsSegment.slice(1))}:${key}`
    },
  }
}
