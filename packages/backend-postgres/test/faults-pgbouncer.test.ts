import { connect } from 'node:net'
import { type Backend, isAgentStateError } from '@agent-state/core'
import { startPgBouncer, startPostgresServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { openPostgresBackend } from '../src/index.js'
import { APP_PASSWORD, APP_ROLE, createAppRole } from './roles.js'

// A fast server restart under clients that talk to it through a real PgBouncer
// (transaction pooling), as the role owning only its schema.
const server = await startPostgresServer()
await createAppRole(server)
const bouncer = await startPgBouncer(server, { users: { [APP_ROLE]: APP_PASSWORD }, poolSize: 4 })
afterAll(async () => {
  await bouncer.stop()
  await server.stop()
})

const open = (namespace: string): Promise<Backend> =>
  openPostgresBackend({
    connectionString: bouncer.urlFor(APP_ROLE, APP_PASSWORD, 'postgres'),
    startupTimeouts: false,
    namespace,
    poolSize: 4,
  })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const bytes = (n: number) => new TextEncoder().encode(String(n))
const number = (value: Uint8Array | undefined) => Number(new TextDecoder().decode(value))

/** Whether PostgreSQL itself (not PgBouncer) refuses TCP connections: the server is down. */
function serverDown(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(server.port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(true))
  })
}

/** How an operation ended: `ok` or its contract code (anything else is kept whole). */
async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    await run()
    return 'ok'
  } catch (error) {
    return isAgentStateError(error) ? error.code : `unexpected: ${String(error)}`
  }
}

/** A write's failure with the SQLSTATE it was answered with (`null`: no answer, the connection died). */
async function answer(run: () => Promise<unknown>): Promise<{ code: string; sqlState: unknown }> {
  try {
    await run()
    return { code: 'ok', sqlState: null }
  } catch (error) {
    if (!isAgentStateError(error)) return { code: `unexpected: ${String(error)}`, sqlState: null }
    return { code: error.code, sqlState: error.context.sqlState ?? null }
  }
}

describe('a fast server restart behind PgBouncer', () => {
  it('gives UNAVAILABLE to calls PgBouncer refused while the server was down, INDETERMINATE only to writes whose connection died unanswered, then works on with data and fencing intact', async () => {
    const backend = await open('restart')
    const before = await backend.acquireLease('fenced', { holder: 'a', ttlMs: 200 })
    // Writes in a loop across the restart: each outcome is ok, INDETERMINATE (in flight when the
    // server went) or UNAVAILABLE (not sent); the stored value is then the last acknowledged
    // write or a later INDETERMINATE one.
    const acknowledged: number[] = []
    const indeterminate: number[] = []
    const loopCodes = new Set<string>()
    let running = true
    const loop = (async () => {
      for (let n = 1; running; n++) {
        const got = await outcome(() => backend.put('counter', bytes(n)))
        if (got === 'ok') acknowledged.push(n)
        else {
          loopCodes.add(got)
          if (got === 'INDETERMINATE') indeterminate.push(n)
          await sleep(20)
        }
      }
    })()
    while (acknowledged.length < 10) await sleep(10)
    const restarted = server.restart({ mode: 'fast', downMs: 1500 })
    // Calls made while PostgreSQL is down: nothing reached it, so every failure is UNAVAILABLE,
    // reads and writes alike (PgBouncer answers them itself).
    while (!(await serverDown())) await sleep(5)
    const reads = Promise.all([
      outcome(() => backend.get('counter')),
      outcome(() => backend.list({ prefix: '' })),
      outcome(() => backend.getLease('fenced')),
    ])
    const writes = Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        answer(() =>
          i % 2 === 0
            ? backend.put(`while-down/${i}`, bytes(i))
            : backend.acquireLease(`while-down/${i}`, { holder: 'b', ttlMs: 1000 }),
        ),
      ),
    )
    const down = { reads: await reads, writes: await writes }
    await restarted
    const acknowledgedBefore = acknowledged.length
    while (acknowledged.length < acknowledgedBefore + 10) await sleep(10)
    running = false
    await loop
    // Reads never changed anything: UNAVAILABLE. A write PgBouncer refused with an answer (its
    // 08P01 "server login has been failing") was never sent: UNAVAILABLE too. Only a write whose
    // pooled connection died without an answer (no SQLSTATE) cannot know: INDETERMINATE.
    expect(down.reads).toEqual(['UNAVAILABLE', 'UNAVAILABLE', 'UNAVAILABLE'])
    const answered = down.writes.filter((w) => w.sqlState !== null)
    expect(answered.length, JSON.stringify(down.writes)).toBeGreaterThan(0)
    for (const w of down.writes) {
      expect(w.code, JSON.stringify(w)).toBe(w.sqlState === null ? 'INDETERMINATE' : 'UNAVAILABLE')
    }
    expect(
      [...loopCodes].filter((code) => code !== 'INDETERMINATE' && code !== 'UNAVAILABLE'),
    ).toEqual([])
    // The restart was felt by the loop too.
    expect(loopCodes.size).toBeGreaterThan(0)
    // Nothing written while down landed; the counter holds what the outcomes allow.
    expect((await backend.list({ prefix: 'while-down/' })).entries).toEqual([])
    for (let i = 1; i < 6; i += 2) expect(await backend.getLease(`while-down/${i}`)).toBeNull()
    const stored = number((await backend.get('counter'))?.value)
    const last = acknowledged.at(-1) ?? 0
    expect([last, ...indeterminate.filter((n) => n > last)]).toContain(stored)
    await sleep(250)
    const after = await backend.acquireLease('fenced', { holder: 'b', ttlMs: 1000 })
    expect(after.token).toBeGreaterThan(before.token)
    await backend.close()
  }, 120_000)
})
