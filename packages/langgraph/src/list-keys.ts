import type { Backend } from '@agent-state/core'

/** Every key under `prefix`, all pages. */
export async function listKeys(backend: Backend, prefix: string): Promise<string[]> {
  const keys: string[] = []
  let cursor: string | undefined
  do {
    const page = await backend.list(cursor === undefined ? { prefix } : { prefix, cursor })
    for (const entry of page.entries) keys.push(entry.key)
    cursor = page.cursor
  } while (cursor !== undefined)
  return keys
}
