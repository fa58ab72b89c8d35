import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { connect, createServer, type Server } from 'node:net'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  freePort,
  redisCli,
  SERVICE_USER,
  startPgBouncer,
  startPostgresServer,
  startRedisServer,
  startRgw,
  startTcpProxy,
} from '../src/index.js'
import { cpuSeconds } from '../src/process-cpu.js'

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Sends `message` through a TCP connection and resolves the echo once it is complete. */
function roundTrip(port: number, message: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(message))
    let received = ''
    socket.on('data', (chunk) => {
      received += chunk.toString()
      if (received.length >= message.length) {
        socket.destroy()
        resolve(received)
      }
    })
    socket.on('error', reject)
  })
}

describe('service launchers', () => {
  it("cpuSeconds reads a live process's CPU time and nothing for one that is gone", async () => {
    // Busy until it has used 400 ms of CPU, then idle until killed.
    const busy = spawn(process.execPath, [
      '-e',
      'while (process.cpuUsage().user < 400_000); setInterval(() => {}, 1000)',
    ])
    const gone = new Promise((resolve) => busy.once('exit', resolve))
    try {
      let seconds = 0
      for (let waited = 0; seconds < 0.3 && waited < 20_000; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100))
        seconds = cpuSeconds(busy.pid) ?? 0
      }
      expect(seconds).toBeGreaterThanOrEqual(0.3)
      expect(seconds).toBeLessThan(10)
    } finally {
      busy.kill('SIGKILL')
    }
    await gone
    expect(cpuSeconds(busy.pid)).toBeUndefined()
    expect(cpuSeconds(undefined)).toBeUndefined()
  })

  it('freePort gives distinct bindable loopback ports', async () => {
    const ports = await Promise.all([freePort(), freePort(), freePort()])
    for (const port of ports) expect(port).toBeGreaterThan(0)
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(ports[0], '127.0.0.1', resolve))
    await new Promise((resolve) => server.close(resolve))
  })

  it('starts a private redis-server on loopback, restarts it with its data, and stops it completely', async () => {
    const redis = await startRedisServer()
    const pid = redis.pid as number
    expect(redis.host).toBe('127.0.0.1')
    expect(alive(pid)).toBe(true)
    expect((await redisCli(redis.port, ['SET', 'k', 'v'])).trim()).toBe('OK')
    await redis.restart()
    expect((await redisCli(redis.port, ['GET', 'k'])).trim()).toBe('v')
    const restartedPid = redis.pid as number
    await redis.stop()
    expect(alive(pid)).toBe(false)
    expect(alive(restartedPid)).toBe(false)
    expect(existsSync(redis.dir)).toBe(false)
  })

  it('kills a redis-server whose test process was SIGKILLed, and wipes its directory', async () => {
    await expectOrphanCleanedUp('orphan-redis', 10_000)
  })

  it('starts PostgreSQL as the service user, keeps its data across fast and immediate restarts, and stops completely', async () => {
    const server = await startPostgresServer()
    const pid = server.pid as number
    expect(alive(pid)).toBe(true)
    // initdb and postgres refuse root: as root, they run as the unprivileged service user.
    const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
    if (process.getuid?.() === 0) {
      expect(uid).not.toBe(0)
      expect(
        (
          await new Promise<string>((resolve) =>
            spawn('id', ['-un', String(uid)]).stdout.on('data', (d: Buffer) => resolve(String(d))),
          )
        ).trim(),
      ).toBe(SERVICE_USER)
    }
    await server.sql("CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')")
    await server.restart({ mode: 'fast' })
    await server.restart({ mode: 'immediate' })
    expect((await server.sql('SELECT v FROM t')).trim()).toBe('kept')
    const restartedPid = server.pid as number
    await server.stop()
    expect(alive(pid)).toBe(false)
    expect(alive(restartedPid)).toBe(false)
    expect(existsSync(server.dir)).toBe(false)
  }, 120_000)

  it('starts PgBouncer in transaction-pooling mode in front of PostgreSQL', async () => {
    const server = await startPostgresServer()
    try {
      await server.sql("CREATE ROLE bouncer_user LOGIN PASSWORD 'b p@ss'")
      const bouncer = await startPgBouncer(server, { users: { bouncer_user: 'b p@ss' } })
      const config = readFileSync(`${bouncer.dir}/pgbouncer.ini`, 'utf8')
      expect(config).toMatch(/^pool_mode = transaction$/m)
      expect(config).toMatch(new RegExp(`^\\* = host=127.0.0.1 port=${server.port}$`, 'm'))
      const probe = await new Promise<boolean>((resolve) => {
        const socket = connect(bouncer.port, '127.0.0.1', () => {
          socket.destroy()
          resolve(true)
        })
        socket.on('error', () => resolve(false))
      })
      expect(probe).toBe(true)
      await bouncer.stop()
      expect(existsSync(bouncer.dir)).toBe(false)
    } finally {
      await server.stop()
    }
  }, 120_000)

  it('kills a PostgreSQL whose test process was SIGKILLed, and wipes its directory', async () => {
    await expectOrphanCleanedUp('orphan-postgres', 15_000)
  }, 120_000)

  it('a TCP proxy forwards, drops connections mid-stream and refuses on demand', async () => {
    const echo: Server = createServer((socket) => {
      socket.on('error', () => {}) // the proxy resets connections on purpose
      socket.pipe(socket)
    })
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
    const address = echo.address()
    if (address === null || typeof address === 'string') throw new Error('no address')
    const proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: address.port } })
    try {
      expect(await roundTrip(proxy.port, 'hello')).toBe('hello')
      const cut = new Promise<string>((resolve) => {
        const socket = connect(proxy.port, '127.0.0.1', () => {
          socket.write('x')
          setTimeout(() => proxy.dropAll(), 50)
        })
        socket.on('error', (error) => resolve((error as NodeJS.ErrnoException).code ?? 'error'))
        socket.on('close', () => resolve('closed'))
      })
      expect(['closed', 'ECONNRESET']).toContain(await cut)
      await proxy.setRefusing(true)
      await expect(roundTrip(proxy.port, 'x')).rejects.toMatchObject({ code: 'ECONNREFUSED' })
      await proxy.setRefusing(false)
      expect(await roundTrip(proxy.port, 'again')).toBe('again')
    } finally {
      await proxy.stop()
      await new Promise((resolve) => echo.close(resolve))
    }
  })

  it("a TCP proxy's latency mode delays each chunk from its arrival; pause mode one chunk after another", async () => {
    const echo: Server = createServer((socket) => {
      socket.on('error', () => {})
      socket.pipe(socket)
    })
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
    const address = echo.address()
    if (address === null || typeof address === 'string') throw new Error('no address')
    const proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: address.port } })
    // Five chunks written 20 ms apart, echoed back: ms after the first write until every byte is back.
    const burst = (): Promise<{ elapsedMs: number; echoed: string }> =>
      new Promise((resolve, reject) => {
        const parts = ['a1', 'b2', 'c3', 'd4', 'e5']
        const expected = parts.join('')
        let echoed = ''
        const started = performance.now()
        const socket = connect(proxy.port, '127.0.0.1', () => {
          for (const [index, part] of parts.entries()) {
            setTimeout(() => socket.write(part), index * 20)
          }
        })
        socket.setNoDelay(true)
        socket.on('error', reject)
        socket.on('data', (data) => {
          echoed += data.toString()
          if (echoed.length >= expected.length) {
            resolve({ elapsedMs: performance.now() - started, echoed })
            socket.destroy()
          }
        })
      })
    try {
      proxy.setDelay(200, 'latency')
      const latency = await burst()
      proxy.setDelay(200, 'pause')
      const paused = await burst()
      // Bytes arrive whole and in order in both modes.
      expect(latency.echoed).toBe('a1b2c3d4e5')
      expect(paused.echoed).toBe('a1b2c3d4e5')
      // Latency: the last chunk, written at 80 ms, is back 2 × 200 ms later (the chunks overlap).
      // Pause: each chunk waits for the one before, one way and back: at least 5 × 200 + 200 ms.
      // (The pause mode is the mutant of the latency mode: it fails the first bound.)
      expect(latency.elapsedMs).toBeGreaterThanOrEqual(400)
      expect(latency.elapsedMs).toBeLessThan(900)
      expect(paused.elapsedMs).toBeGreaterThanOrEqual(1000)
    } finally {
      await proxy.stop()
      await new Promise((resolve) => echo.close(resolve))
    }
  })

  it('starts Ceph RGW on loopback, answers S3 requests, and stops without leftovers', async () => {
    const rgw = await startRgw()
    try {
      expect(rgw.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const response = await fetch(rgw.endpoint)
      // An anonymous ListBuckets: RGW answers (with an S3 XML body), which proves it serves S3.
      expect(await response.text()).toMatch(/ListAllMyBucketsResult|AccessDenied/)
    } finally {
      await rgw.stop()
    }
    expect(existsSync(rgw.dir)).toBe(false)
    await expect(fetch(rgw.endpoint)).rejects.toThrow()
  })
})

/**
 * Starts a fixture that starts a server and prints `{ pid, dir }`, SIGKILLs the
 * fixture, and expects the watchdog to stop the server and wipe its directory
 * within `waitMs`.
 */
async function expectOrphanCleanedUp(fixtureName: string, waitMs: number): Promise<void> {
  const fixture = fileURLToPath(new URL(`./fixtures/${fixtureName}.ts`, import.meta.url))
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), fixture], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const line = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString()))
    child.once('exit', (code) => reject(new Error(`fixture exited with ${code}`)))
  })
  const { pid, dir } = JSON.parse(line) as { pid: number; dir: string }
  expect(alive(pid)).toBe(true)
  child.kill('SIGKILL')
  const deadline = Date.now() + waitMs
  while ((alive(pid) || existsSync(dir)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  expect(alive(pid)).toBe(false)
  expect(existsSync(dir)).toBe(false)
}
