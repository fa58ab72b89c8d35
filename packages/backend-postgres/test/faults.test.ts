import { type Backend, type ChangeHint, isAgentStateError } from '@agent-state/core'
import { startPostgresServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { openPostgresBackend } from '../src/index.js'

// Server restarts and killed connections: every failure is UNAVAILABLE or
// INDETERMINATE (a write whose outcome is unknown), never CORRUPT or a wrong
// read, and fencing tokens keep growing across restarts.
const server = await startPostgresServer()
afterAll(() => server.stop())

const open = (namespace: string): Promise<Backend> =>
  openPostgresBackend({ connectionString: server.url, namespace, poolSize: 4 })

const bytes = (n: number) => new TextEncoder().encode(String(n))
const number = (value: Uint8Array | undefined) => Number(new TextDecoder().decode(value))

/**
 * Writes increasing numbers to one key until `stop`; records which writes
 * were acknowledged, which were INDETERMINATE, and any other failure.
 */
function writeLoop(backend: Backend, key: string) {
  const acknowledged: number[] = []
  const indeterminate: number[] = []
  const unexpected: unknown[] = []
  const codes = new Set<string>()
  let running = true
  const done = (async () => {
    for (let n = 1; running; n++) {
      try {
        await backend.put(key, bytes(n))
        acknowledged.push(n)
      } catch (error) {
        if (isAgentStateError(error, 'INDETERMINATE')) indeterminate.push(n)
        else if (!isAgentStateError(error, 'UNAVAILABLE')) unexpected.push(error)
        if (isAgentStateError(error)) codes.add(error.code)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }
  })()
  return {
    acknowledged,
    indeterminate,
    unexpected,
    codes,
    stop: async () => {
      running = false
      await done
    },
  }
}

/** The key holds the last acknowledged write or a later indeterminate one: nothing older, nothing torn. */
async function expectConsistent(backend: Backend, key: string, loop: ReturnType<typeof writeLoop>) {
  const stored = number((await backend.get(key))?.value)
  const last = loop.acknowledged.at(-1) ?? 0
  const allowed = [last, ...loop.indeterminate.filter((n) => n > last)]
  expect(allowed).toContain(stored)
}

async function eventually<T>(attempt: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 30_000
  for (;;) {
    try {
      return await attempt()
    } catch (error) {
      if (!isAgentStateError(error, 'UNAVAILABLE') || Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

/** A watch recording its hints, each with the time it arrived. */
function record(backend: Backend, prefix: string) {
  const controller = new AbortController()
  const hints: Array<{ hint: ChangeHint; at: number }> = []
  const done = (async () => {
    for await (const hint of backend.watch?.(prefix, { signal: controller.signal }) ?? []) {
      hints.push({ hint, at: performance.now() })
    }
  })()
  return {
    hints,
    stop: async () => {
      controller.abort()
      await done
    },
  }
}

describe.each(['fast', 'immediate'] as const)('a %s server restart', (mode) => {
  it('fails operations with UNAVAILABLE or INDETERMINATE, keeps acknowledged writes, and tokens keep growing', async () => {
    const backend = await open(`restart-${mode}`)
    const watching = await open(`restart-${mode}`)
    const watch = record(watching, '')
    const before = await backend.acquireLease('fenced', { holder: 'a', ttlMs: 200 })
    const loop = writeLoop(backend, 'counter')
    // 20 writes, and their hints: on a loaded host the watch may start (its first resync) only
    // after the 20th write (a clean run at load 20-37 failed here after 323 ms), so the hints are
    // awaited, bounded, rather than expected to be there already.
    const started = performance.now()
    while (
      (loop.acknowledged.length < 20 ||
        !watch.hints.some((h) => h.hint.kind === 'key' && h.hint.key === 'counter')) &&
      performance.now() - started < 30_000
    ) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const hintsBefore = watch.hints.length
    expect(hintsBefore).toBeGreaterThan(1)
    await server.restart({ mode, downMs: 500 })
    const back = performance.now()
    const acknowledgedBefore = loop.acknowledged.length
    while (loop.acknowledged.length < acknowledgedBefore + 20) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    // The watch lost its listen connection with the server: it reopens it and resyncs within the
    // claimed delay (plus the tier's loaded-host margin) of the server being back, and the writes
    // after the resync are hinted again. Waited for while the writes go on: the pool's clients can
    // be back before the listen connection's back-off ends.
    const claimed = watching.capabilities.changeNotification?.maxDelayMs as number
    const resyncOf = () => watch.hints.slice(hintsBefore).find((h) => h.hint.kind === 'resync')
    while (resyncOf() === undefined && performance.now() - back < claimed + 2000) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const resync = resyncOf()
    expect(resync).toBeDefined()
    expect((resync?.at as number) - back).toBeLessThan(claimed + 2000)
    const hintedAfter = () =>
      watch.hints
        .slice(watch.hints.indexOf(resync as (typeof watch.hints)[number]) + 1)
        .some((h) => h.hint.kind === 'key' && h.hint.key === 'counter')
    const resynced = performance.now()
    while (!hintedAfter() && performance.now() - resynced < claimed + 2000) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    await loop.stop()
    expect(hintedAfter()).toBe(true)
    expect(loop.unexpected).toEqual([])
    // The restart was felt: at least one operation failed across it.
    expect(loop.codes.size).toBeGreaterThan(0)
    await expectConsistent(backend, 'counter', loop)
    await watch.stop()
    await watching.close()
    await new Promise((resolve) => setTimeout(resolve, 250))
    const taken = await eventually(() =>
      backend.acquireLease('fenced', { holder: 'b', ttlMs: 1000 }),
    )
    expect(taken.token).toBeGreaterThan(before.token)
    await backend.close()
  }, 120_000)
})

describe('pg_terminate_backend', () => {
  it('killed connections give UNAVAILABLE to reads and UNAVAILABLE or INDETERMINATE to writes, never corruption', async () => {
    const backend = await open('terminated')
    const loop = writeLoop(backend, 'counter')
    const readCodes = new Set<string>()
    let reading = true
    const reads = (async () => {
      while (reading) {
        try {
          const value = await backend.get('counter')
          if (value !== null) expect(number(value.value)).toBeGreaterThan(0)
        } catch (error) {
          readCodes.add(isAgentStateError(error) ? error.code : String(error))
        }
      }
    })()
    for (let round = 0; round < 40; round++) {
      await server.sql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'agent-state'",
      )
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    reading = false
    await reads
    await loop.stop()
    expect(loop.unexpected).toEqual([])
    expect([...readCodes].filter((code) => code !== 'UNAVAILABLE')).toEqual([])
    // The terminations hit operations in flight, reads and writes alike.
    expect(loop.codes.size + readCodes.size).toBeGreaterThan(0)
    await eventually(() => expectConsistent(backend, 'counter', loop))
    await backend.close()
  }, 120_000)
})
