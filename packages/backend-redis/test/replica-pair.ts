import { isAgentStateError } from '@agent-state/core'
import {
  type RedisServer,
  type RedisServerOptions,
  redisCli,
  startRedisServer,
} from '@agent-state/test-services'

/** Waits `ms` milliseconds. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls `check` every 20 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 20_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(20)
  }
}

/**
 * A primary and a replica of it, on free ports, once the replica's link is up. `replicaOptions`
 * (e.g. `clockOffsetSeconds`) apply to the replica only.
 */
export async function startReplicaPair(
  replicaOptions: Omit<RedisServerOptions, 'extraArgs'> = {},
): Promise<{ primary: RedisServer; replica: RedisServer }> {
  const primary = await startRedisServer()
  const replica = await startRedisServer({
    ...replicaOptions,
    extraArgs: ['--replicaof', '127.0.0.1', String(primary.port)],
  })
  await until('the replica link', async () =>
    (await redisCli(replica.port, ['INFO', 'replication'])).includes('master_link_status:up'),
  )
  return { primary, replica }
}

/** How `promise` settled: `resolved`, an AgentStateError's code and context, or `raw: …`. */
export async function failureOf(
  promise: Promise<unknown>,
): Promise<{ code: string; context: unknown }> {
  try {
    await promise
    return { code: 'resolved', context: null }
  } catch (error) {
    if (!isAgentStateError(error)) return { code: `raw: ${String(error)}`, context: null }
    return { code: error.code, context: error.context }
  }
}
