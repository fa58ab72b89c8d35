import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { type Backend, isAgentStateError } from '@agent-state/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freshNamespace, openTestBackend, s3Config } from './s3-config.js'

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

/** Deadline of each request in these tests, and the attempts each operation may make. */
const TIMEOUT_MS = 1000
const READ_ATTEMPTS = 2
const WRITE_ATTEMPTS = 2
/** Scheduling slack on a loaded machine; far below the hang the bound guards against. */
const SLACK_MS = 4000

type Mode = 'pass' | 'silent' | 'stall'

/** The stalling server (a separate process) and the connection events it reported. */
interface Staller {
  readonly child: ChildProcess
  readonly endpoint: string
  readonly lines: string[]
  setMode(mode: Mode): Promise<void>
}

async function startStaller(target: URL): Promise<Staller> {
  const script = fileURLToPath(new URL('./stalling-server.mjs', import.meta.url))
  const child = spawn(process.execPath, [script, target.hostname, target.port], {
    stdio: ['pipe', 'pipe', 'inherit'],
  })
  const lines: string[] = []
  const waiters: { match: string; resolve: () => void }[] = []
  let partial = ''
  child.stdout?.setEncoding('utf8')
  child.stdout?.on('data', (chunk: string) => {
    partial += chunk
    const complete = partial.split('\n')
    partial = complete.pop() ?? ''
    for (const line of complete) {
      lines.push(line)
      for (const waiter of waiters.filter((w) => line.startsWith(w.match))) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve()
      }
    }
  })
  const waitFor = (match: string) =>
    new Promise<void>((resolve, reject) => {
      if (lines.some((line) => line.startsWith(match))) return resolve()
      waiters.push({ match, resolve })
      child.once('exit', (code) => reject(new Error(`the stalling server exited (${code})`)))
    })
  await waitFor('listening ')
  const port = lines.find((line) => line.startsWith('listening '))?.split(' ')[1]
  return {
    child,
    endpoint: `http://127.0.0.1:${port}`,
    lines,
    async setMode(mode) {
      lines.length = 0
      child.stdin?.write(`${mode}\n`)
      await waitFor(`mode ${mode}`)
    },
  }
}

/** How `operation` ended and how long it took; `hung` when it outlived `boundMs`. */
async function settle(
  operation: () => Promise<unknown>,
  boundMs: number,
): Promise<{ error: unknown; elapsed: number; hung: boolean }> {
  const started = performance.now()
  let timer: ReturnType<typeof setTimeout> | undefined
  const hung = new Promise<'hung'>((resolve) => {
    timer = setTimeout(() => resolve('hung'), boundMs)
  })
  const outcome = await Promise.race([
    operation().then(
      () => ({ error: undefined }),
      (error: unknown) => ({ error }),
    ),
    hung,
  ])
  clearTimeout(timer)
  const elapsed = performance.now() - started
  return outcome === 'hung'
    ? { error: undefined, elapsed, hung: true }
    : { error: outcome.error, elapsed, hung: false }
}

let staller: Staller
const opened: Backend[] = []

beforeAll(async () => {
  staller = await startStaller(new URL(s3Config().endpoint))
})

afterAll(async () => {
  for (const backend of opened) await backend.close()
  staller.child.stdin?.end()
  staller.child.kill()
})

/**
 * Switches the stalling server to `mode` and returns a backend through it
 * whose start-up probe (cached per endpoint and bucket) was done while the
 * server still forwarded. The returned backend is a fresh one: it has no
 * pooled connection from the forwarding phase that an attempt could land on.
 */
async function throughStaller(mode: Mode): Promise<Backend> {
  await staller.setMode('pass')
  const namespace = freshNamespace('hang')
  const options = {
    endpoint: staller.endpoint,
    requestTimeoutMs: TIMEOUT_MS,
    readAttempts: READ_ATTEMPTS,
    writeAttempts: WRITE_ATTEMPTS,
  }
  const warm = openTestBackend(namespace, options)
  opened.push(warm)
  await warm.put('warm-up', bytes('probe done'))
  await staller.setMode(mode)
  const backend = openTestBackend(namespace, options)
  opened.push(backend)
  return backend
}

/** Every connection the stalling server accepted in `mode` is closed again (no socket lingers). */
async function expectConnectionsClosed(mode: Mode): Promise<void> {
  const count = (event: string) =>
    staller.lines.filter((line) => line === `${event} ${mode}`).length
  const deadline = Date.now() + 5000
  while (count('closed') < count('accepted') && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  expect(count('accepted')).toBeGreaterThan(0)
  expect(count('closed')).toBe(count('accepted'))
}

describe.each([
  ['accepts and never answers', 'silent'],
  ['answers the headers, then stalls the body', 'stall'],
] as const)('s3 backend against a server that %s', (_label, mode) => {
  it('fails a read with UNAVAILABLE within readAttempts × requestTimeoutMs', async () => {
    const backend = await throughStaller(mode)
    const bound = READ_ATTEMPTS * TIMEOUT_MS + SLACK_MS
    const { error, elapsed, hung } = await settle(() => backend.get('warm-up'), bound)
    expect(hung).toBe(false)
    expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
    expect((error as { context: Record<string, unknown> }).context.reason).toBe('timeout')
    // Each attempt waited for its whole deadline: the timeout, not some other failure, ended it.
    expect(elapsed).toBeGreaterThanOrEqual(READ_ATTEMPTS * TIMEOUT_MS - 50)
    expect(staller.lines.filter((line) => line === `accepted ${mode}`)).toHaveLength(READ_ATTEMPTS)
    await expectConnectionsClosed(mode)
  })

  it('fails a listing with UNAVAILABLE within readAttempts × requestTimeoutMs', async () => {
    const backend = await throughStaller(mode)
    const bound = READ_ATTEMPTS * TIMEOUT_MS + SLACK_MS
    const { error, hung } = await settle(() => backend.list({ prefix: '' }), bound)
    expect(hung).toBe(false)
    expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
    expect((error as { context: Record<string, unknown> }).context.reason).toBe('timeout')
    await expectConnectionsClosed(mode)
  })

  it('fails a write with INDETERMINATE within (writeAttempts + readAttempts) × requestTimeoutMs', async () => {
    const backend = await throughStaller(mode)
    // writeAttempts PutObjects, then a read-back of readAttempts GetObjects.
    const bound = (WRITE_ATTEMPTS + READ_ATTEMPTS) * TIMEOUT_MS + SLACK_MS
    // Create-only goes straight to PutObject (a plain put of an unseen key reads it first).
    const { error, hung } = await settle(
      () => backend.put('k', bytes('maybe'), { ifNoneMatch: '*' }),
      bound,
    )
    expect(hung).toBe(false)
    expect(isAgentStateError(error, 'INDETERMINATE')).toBe(true)
    expect((error as { retryable: boolean }).retryable).toBe(false)
    expect(staller.lines.filter((line) => line === `accepted ${mode}`)).toHaveLength(
      WRITE_ATTEMPTS + READ_ATTEMPTS,
    )
    await expectConnectionsClosed(mode)
  })
})
