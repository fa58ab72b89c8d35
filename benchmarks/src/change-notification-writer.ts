/**
 * The writer process of the change-notification benchmark: opens the
 * backend named in its first message, then for each `{ key }` message puts
 * the key and replies with when the put started and when it was
 * acknowledged, on the shared host clock (`performance.timeOrigin + now`).
 */
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createRedisBackend } from '@agent-state/redis'
import { createSqliteBackend } from '@agent-state/sqlite'

const now = () => performance.timeOrigin + performance.now()
let backend: Backend | undefined

process.on(
  'message',
  async (message: { open?: { kind: string; options: never }; key?: string }) => {
    if (message.open !== undefined) {
      const { kind, options } = message.open
      backend =
        kind === 'fs'
          ? createFsBackend(options)
          : kind === 'sqlite'
            ? createSqliteBackend(options)
            : createRedisBackend(options)
      process.send?.({ ready: true })
      return
    }
    if (message.key !== undefined && backend !== undefined) {
      const start = now()
      await backend.put(message.key, new TextEncoder().encode(String(start)))
      process.send?.({ key: message.key, start, acked: now() })
    }
  },
)
process.on('disconnect', () => {
  void backend?.close().finally(() => process.exit(0))
})
