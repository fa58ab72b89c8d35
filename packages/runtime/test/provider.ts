import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { childArgs } from '@agent-state/backend-targets'
import { type EffectHandler, effectRejected, type JsonValue } from '../src/index.js'
import { PACKAGE_DIR } from './child-process.js'

/** What the provider recorded. */
export interface ProviderLog {
  readonly applied: Record<string, number>
  readonly results: Record<string, JsonValue>
  readonly duplicates: Record<string, number>
  readonly kills: readonly string[]
  /** Idempotency keys of requests taken in with `x-hold-apply: 1` and not applied yet. */
  readonly held: readonly string[]
}

/** The provider process (test/fixtures/effect-provider.ts) and how to reach it. */
export interface Provider {
  readonly url: string
  log(): Promise<ProviderLog>
  /** Applies every request held with `x-hold-apply: 1` (a call in flight lands); how many. */
  releaseHeld(): Promise<number>
  stop(): Promise<void>
}

/** Starts the provider as a separate process on a free port (from its bundle, like every child). */
export async function startProvider(): Promise<Provider> {
  const node = await childArgs(join(PACKAGE_DIR, 'test/fixtures/effect-provider.ts'))
  return new Promise((resolve, reject) => {
    const child: ChildProcess = spawn(process.execPath, node, {
      cwd: PACKAGE_DIR,
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    child.on('error', reject)
    child.on('exit', (code) => reject(new Error(`the provider exited with ${code}`)))
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const line = out.split('\n')[0]
      if (out.includes('\n') && line !== undefined) {
        const { port } = JSON.parse(line) as { port: number }
        const url = `http://127.0.0.1:${port}`
        resolve({
          url,
          log: async () => (await (await fetch(`${url}/log`)).json()) as ProviderLog,
          releaseHeld: async () =>
            (
              (await (await fetch(`${url}/release-held`, { method: 'POST' })).json()) as {
                released: number
              }
            ).released,
          stop: () =>
            new Promise<void>((done) => {
              child.removeAllListeners('exit')
              child.once('exit', () => done())
              child.kill('SIGTERM')
            }),
        })
      }
    })
  })
}

/** Options of {@link paymentHandler}. */
export interface PaymentHandlerOptions {
  readonly retrySafe?: boolean
  /** Extra headers per dispatch (e.g. the kill-client header of a crash test). */
  readonly headers?: (effectId: string) => Record<string, string>
  /** Called once the provider answered, before the result is returned (a crash point). */
  readonly afterAnswer?: (effectId: string) => void
}

/** The effect handler that talks to the provider by idempotency key. */
export function paymentHandler(
  providerUrl: string,
  options: PaymentHandlerOptions = {},
): EffectHandler {
  return {
    retrySafe: options.retrySafe ?? true,
    async dispatch(call) {
      const response = await fetch(`${providerUrl}/apply`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': call.idempotencyKey,
          ...(options.headers?.(call.effectId) ?? {}),
        },
        body: JSON.stringify(call.request),
        signal: call.signal,
      })
      const body = (await response.json()) as { result?: JsonValue; error?: string }
      if (response.status === 422) throw effectRejected(body.error ?? 'rejected', 'provider_422')
      if (!response.ok) throw new Error(`provider answered ${response.status}`)
      options.afterAnswer?.(call.effectId)
      return body.result ?? null
    },
    async reconcile(call) {
      const response = await fetch(
        `${providerUrl}/status/${encodeURIComponent(call.idempotencyKey)}`,
      )
      const body = (await response.json()) as { status: string; result?: JsonValue }
      return body.status === 'confirmed'
        ? { status: 'confirmed', result: body.result ?? null }
        : { status: 'absent' }
    },
  }
}
