import type { Backend } from '@agent-state/core'
import { createMemoryStore } from '@agent-state/memory'
import { type RelayMutation, relayBackend } from './watch-relay.js'

/** Child factory of the watch mutant tests: the relayed memory backend with `options.mutation`. */
export function createBackend(options: unknown, ctx: { namespace: string }): Backend {
  const { mutation } = options as { mutation: RelayMutation }
  return relayBackend(createMemoryStore(), mutation)({ namespace: ctx.namespace, clock: Date.now })
}
