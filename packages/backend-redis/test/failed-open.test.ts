import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { freePort, type RedisServer, redisCli, startRedisServer } from '@agent-state/test-services'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/**
 * A backend whose first connection fails must not keep its process alive
 * (no reconnect timer, no socket) and must not retry a refused password in
 * the background. Each case runs a child process that never calls close().
 */

const CHILD = fileURLToPath(new URL('./failed-open-child.ts', import.meta.url))
/** connectTimeoutMs (2 s) per operation plus tsx start-up on a loaded machine. */
const EXIT_BOUND_MS = 20_000
const password = 'Failed-Open-PW-4410'

interface ChildRun {
  /** Exit code, or `'still running'` when it outlived {@link EXIT_BOUND_MS} (then killed). */
  readonly exit: number | string
  readonly outcomes: { code: string; retryable?: boolean }[]
}

function runChild(args: readonly string[]): Promise<ChildRun> {
  const child = spawn(
    process.execPath,
    ['--conditions=@agent-state/source', '--import', 'tsx', CHILD, ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  let stdout = ''
  child.stdout.setEncoding('utf8')
  child.stdout.on('data', (chunk: string) => {
    stdout += chunk
  })
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      resolve({ exit: 'still running', outcomes: parse(stdout) })
    }, EXIT_BOUND_MS)
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ exit: code ?? String(signal), outcomes: parse(stdout) })
    })
  })
}

function parse(stdout: string): ChildRun['outcomes'] {
  const line = stdout.trim().split('\n').at(-1)
  return line === undefined || line === '' ? [] : JSON.parse(line)
}

async function connectionsReceived(server: RedisServer): Promise<number> {
  const info = await redisCli(server.port, ['INFO', 'stats'], { password })
  const match = /total_connections_received:(\d+)/.exec(info)
  if (match === null) throw new Error(`no connection count in INFO stats: ${info}`)
  return Number(match[1])
}

let secured: RedisServer
beforeAll(async () => {
  secured = await startRedisServer({ password })
})
afterAll(() => secured.stop())

describe('a redis backend whose connection fails', () => {
  it('lets the process exit by itself after a refused connection', async () => {
    // A free port nobody listens on: every connect is refused.
    const port = await freePort()
    const run = await runChild([String(port)])
    expect(run.exit).toBe(0)
    expect(run.outcomes).toEqual([
      { code: 'UNAVAILABLE', retryable: true },
      { code: 'UNAVAILABLE', retryable: true },
    ])
  }, 60_000)

  it('lets the process exit by itself after a wrong password, without retrying it', async () => {
    const before = await connectionsReceived(secured)
    const run = await runChild([String(secured.port), `${password}-wrong`])
    const after = await connectionsReceived(secured)
    expect(run.exit).toBe(0)
    expect(run.outcomes).toEqual([
      { code: 'UNAVAILABLE', retryable: false },
      { code: 'UNAVAILABLE', retryable: false },
    ])
    // One connection per operation, plus the INFO call's own: no reconnect loop.
    expect(after - before).toBe(3)
  }, 60_000)
})
