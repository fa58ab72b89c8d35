import {
  AgentStateError,
  backendFailure,
  type Capabilities,
  quoteForMessage,
} from '@agent-state/core'
import type { RedisConnection } from './connection.js'
import type { RedisKeyLayout } from './key-layout.js'
import type { LuaScript } from './lua-scripts.js'
import type { ResolvedRedisOptions } from './options.js'
import { reply } from './script-replies.js'

type Arg = string | Buffer

/** What every operation of one backend instance shares: its connection, layout and state. */
export interface OperationContext {
  readonly connection: RedisConnection
  readonly layout: RedisKeyLayout
  readonly capabilities: Capabilities
  /** Throws `CLOSED` once the backend is closed. */
  assertOpen(): void
  /**
   * Runs a mutating script and returns its reply as strings. Under
   * `replication`, a successful reply (`OK`, or 1 from release) counts only
   * when enough replicas confirmed it (else `INDETERMINATE`); a refusal
   * (precondition, lease) wrote nothing, so it stands without confirmation.
   */
  mutate(
    script: LuaScript,
    operation: string,
    key: string,
    keys: readonly string[],
    args: readonly Arg[],
  ): Promise<unknown>
  /** Runs a read-only script; its reply as strings (CORRUPT otherwise). */
  read(
    script: LuaScript,
    operation: string,
    key: string,
    keys: readonly string[],
    args: readonly Arg[],
  ): Promise<string[]>
}

/** The context of one backend instance; `isClosed` reports whether `close()` ran. */
export function createOperationContext(
  options: ResolvedRedisOptions,
  connection: RedisConnection,
  layout: RedisKeyLayout,
  capabilities: Capabilities,
  isClosed: () => boolean,
): OperationContext {
  function assertOpen(): void {
    if (isClosed()) throw new AgentStateError('CLOSED', 'The redis backend is closed')
  }
  const required = options.replication?.replicas
  return {
    connection,
    layout,
    capabilities,
    assertOpen,
    async mutate(script, operation, key, keys, args) {
      assertOpen()
      // Without replication a mutation is a plain script call: no WAIT, no bookkeeping.
      if (required === undefined) return connection.script(script, operation, keys, args)
      const { reply: raw, acked } = await connection.mutate(script, operation, keys, args)
      const succeeded = raw === 1 || (Array.isArray(raw) && raw[0] === 'OK')
      if (succeeded && (acked ?? 0) < required) {
        throw backendFailure({
          operation,
          mayHaveApplied: true,
          message: `${operation} of ${quoteForMessage(key)} was applied on the primary but confirmed by ${acked ?? 0} of ${required} replicas: it may be lost in a failover`,
          retryable: true,
          context: { key, acked: acked ?? 0, required },
        })
      }
      return raw
    },
    async read(script, operation, key, keys, args) {
      assertOpen()
      return reply(await connection.script(script, operation, keys, args), key)
    },
  }
}
