import { type Backend, type ChangeHint, watchInterruptOf } from '@agent-state/core'
import { redisCli, startRedisServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { createRedisBackend } from '../src/index.js'

// A real server per file, restarted by one of the tests: never a skip.
const server = await startRedisServer()
afterAll(() => server.stop())

const bytes = (text: string) => new TextEncoder().encode(text)
/** The tier's loaded-host margin (AGENT_STATE_WATCH_MARGIN_MS's default), on top of the claim. */
const MARGIN_MS = 2000

/** A watch recording every hint with its arrival time. */
function record(b: Backend, prefix: string) {
  const controller = new AbortController()
  const hints: Array<{ hint: ChangeHint; at: number }> = []
  const done = (async () => {
    for await (const hint of b.watch?.(prefix, { signal: controller.signal }) ?? []) {
      hints.push({ hint, at: performance.now() })
    }
  })()
  return {
    hints,
    async until(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
      const deadline = performance.now() + timeoutMs
      while (!predicate()) {
        if (performance.now() > deadline) return false
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      return true
    },
    async stop() {
      controller.abort()
      await done
    },
  }
}

/** Retries an operation while the server is coming back (the backend fails fast, by design). */
async function eventually<T>(run: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 15_000
  for (;;) {
    try {
      return await run()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

describe('redis change notification', () => {
  const open = (namespace: string) => createRedisBackend({ port: server.port, namespace })

  it('resyncs within the claimed delay after CLIENT KILL of the subscriber, each time', async () => {
    const watching = open('cn-kill')
    const writer = open('cn-kill')
    const claimed = watching.capabilities.changeNotification?.maxDelayMs as number
    expect(claimed).toBe(500)
    const w = record(watching, '')
    try {
      expect(await w.until(() => w.hints.length === 1, claimed + MARGIN_MS)).toBe(true)
      const delays: number[] = []
      for (let round = 0; round < 5; round++) {
        const before = w.hints.length
        const killed = Number(
          (await redisCli(server.port, ['CLIENT', 'KILL', 'TYPE', 'pubsub'])).trim(),
        )
        expect(killed).toBe(1)
        const at = performance.now()
        const resynced = () => w.hints.slice(before).find((h) => h.hint.kind === 'resync')
        expect(await w.until(() => resynced() !== undefined, claimed + MARGIN_MS)).toBe(true)
        delays.push((resynced()?.at as number) - at)
        // And the new subscription carries hints again.
        await writer.put(`k${round}`, bytes('v'))
        expect(
          await w.until(
            () => w.hints.some((h) => h.hint.kind === 'key' && h.hint.key === `k${round}`),
            claimed + MARGIN_MS,
          ),
        ).toBe(true)
      }
      console.log(`CLIENT KILL to resync: ${delays.map((d) => Math.round(d)).join(', ')} ms`)
    } finally {
      await w.stop()
      await watching.close()
      await writer.close()
    }
  }, 60_000)

  it('resyncs within the claimed delay after the server restarts under a watcher', async () => {
    const watching = open('cn-restart')
    const writer = open('cn-restart')
    const claimed = watching.capabilities.changeNotification?.maxDelayMs as number
    const w = record(watching, 'r/')
    try {
      expect(await w.until(() => w.hints.length === 1, claimed + MARGIN_MS)).toBe(true)
      await writer.put('r/before', bytes('v'))
      expect(await w.until(() => w.hints.length >= 2, claimed + MARGIN_MS)).toBe(true)
      const before = w.hints.length
      await server.restart({ signal: 'SIGKILL', downMs: 500 })
      const back = performance.now()
      const resynced = () => w.hints.slice(before).find((h) => h.hint.kind === 'resync')
      expect(await w.until(() => resynced() !== undefined, claimed + MARGIN_MS)).toBe(true)
      console.log(`server back to resync: ${Math.round((resynced()?.at as number) - back)} ms`)
      await eventually(() => writer.put('r/after', bytes('v')))
      expect(
        await w.until(
          () => w.hints.some((h) => h.hint.kind === 'key' && h.hint.key === 'r/after'),
          claimed + MARGIN_MS,
        ),
      ).toBe(true)
    } finally {
      await w.stop()
      await watching.close()
      await writer.close()
    }
  }, 60_000)

  it('resyncs after its WATCH_INTERRUPT seam drops the subscriber (what verify uses)', async () => {
    const watching = open('cn-seam')
    const writer = open('cn-seam')
    const seam = watchInterruptOf(watching)
    expect(typeof seam).toBe('function')
    const w = record(watching, '')
    try {
      expect(await w.until(() => w.hints.length === 1, 5000)).toBe(true)
      await (seam as () => Promise<void>)()
      // Written while the subscriber is down: only the resync can cover it.
      await writer.put('during', bytes('v'))
      expect(
        await w.until(() => w.hints.slice(1).some((h) => h.hint.kind === 'resync'), 5000),
      ).toBe(true)
    } finally {
      await w.stop()
      await watching.close()
      await writer.close()
    }
  }, 30_000)

  it('holds no subscriber connection once the last watch ends', async () => {
    const b = open('cn-idle')
    const w = record(b, '')
    try {
      expect(await w.until(() => w.hints.length === 1, 5000)).toBe(true)
      const subscribers = async () =>
        (await redisCli(server.port, ['CLIENT', 'LIST', 'TYPE', 'pubsub']))
          .split('\n')
          .filter((line) => line.includes('cmd=')).length
      expect(await subscribers()).toBe(1)
      await w.stop()
      const deadline = Date.now() + 5000
      while ((await subscribers()) !== 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      expect(await subscribers()).toBe(0)
    } finally {
      await b.close()
    }
  }, 30_000)
})
