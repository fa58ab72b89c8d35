import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { freePort } from './free-port.js'

/** Options of {@link startTcpProxy}. */
export interface TcpProxyOptions {
  /** Where connections are forwarded. */
  readonly target: { readonly host: string; readonly port: number }
}

/** How {@link TcpProxy.setDelay} delays chunks. */
export type DelayMode = 'pause' | 'latency'

/** A TCP proxy on 127.0.0.1 with fault controls, for fault-injection tests. */
export interface TcpProxy {
  readonly host: string
  readonly port: number
  /** Connections accepted so far. */
  readonly accepted: number
  /** Connections currently open. */
  readonly open: number
  /**
   * Destroys every current connection pair at once (both sides reset), so
   * requests in flight are cut mid-stream. New connections are still accepted.
   */
  dropAll(): void
  /**
   * While `true`, the listener is closed so new connections are refused
   * (`ECONNREFUSED`); `false` listens again on the same port. Current
   * connections are untouched (combine with {@link dropAll}).
   */
  setRefusing(refusing: boolean): Promise<void>
  /**
   * Delays every forwarded chunk, both ways, by `ms` milliseconds (0 turns it
   * off). `mode` (default `'pause'`) says how chunks that arrive while one is
   * delayed are treated:
   * - `'pause'`: the source is paused until the delayed chunk is written, so
   *   each chunk waits `ms` after the previous one. A burst of k chunks takes
   *   k × `ms`: a link that carries one chunk per delay, which suits fault
   *   tests (a slow peer) but not a latency measurement.
   * - `'latency'`: each chunk is written `ms` after it arrived, in arrival
   *   order, and the source keeps flowing: a link with latency, whose chunks
   *   in flight overlap (what a replica 1 ms away sees).
   */
  setDelay(ms: number, mode?: DelayMode): void
  /** Closes the listener and every connection. */
  stop(): Promise<void>
}

/**
 * Starts a TCP proxy on 127.0.0.1 and a free port that forwards to `target`.
 * Used to cut connections mid-command, refuse connections and add latency
 * without touching the server behind it.
 */
export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>()
  let delayMs = 0
  let delayMode: DelayMode = 'pause'
  let accepted = 0
  let server: Server | undefined
  let port = 0

  const forward = (from: Socket, to: Socket): void => {
    // Latency mode: chunks not yet due, in arrival order, and the one timer that writes them.
    const queued: { chunk: Buffer; due: number }[] = []
    let timer: NodeJS.Timeout | undefined
    const writeDue = (): void => {
      timer = undefined
      const now = performance.now()
      let next = queued[0]
      while (next !== undefined && next.due <= now) {
        queued.shift()
        if (!to.destroyed) to.write(next.chunk)
        next = queued[0]
      }
      if (next !== undefined) timer = setTimeout(writeDue, Math.max(0, next.due - now))
    }
    from.on('data', (chunk: Buffer) => {
      // Chunks still queued from an earlier delay go first: the order is the stream's.
      if (delayMs === 0 && queued.length === 0) {
        to.write(chunk)
        return
      }
      if (delayMode === 'latency' || queued.length > 0) {
        queued.push({ chunk, due: performance.now() + delayMs })
        timer ??= setTimeout(writeDue, delayMs)
        return
      }
      // Keep ordering: pause the source while a delayed chunk is pending.
      from.pause()
      setTimeout(() => {
        if (!to.destroyed) to.write(chunk)
        from.resume()
      }, delayMs)
    })
    from.on('close', () => clearTimeout(timer))
  }

  const onConnection = (client: Socket): void => {
    accepted++
    client.setNoDelay(true)
    const upstream = createConnection({ host: options.target.host, port: options.target.port })
    upstream.setNoDelay(true)
    const pair = { client, upstream }
    pairs.add(pair)
    const close = () => {
      pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on('error', close)
    upstream.on('error', close)
    client.on('close', close)
    upstream.on('close', close)
    forward(client, upstream)
    forward(upstream, client)
  }

  const listen = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const next = createServer(onConnection)
      next.once('error', reject)
      next.listen(port, '127.0.0.1', () => {
        next.off('error', reject)
        server = next
        resolve()
      })
    })

  /**
   * Stops accepting at once. `server.close()` only calls back once every
   * accepted connection has ended, so wait for the listening handle instead.
   */
  const closeListener = async (): Promise<void> => {
    const current = server
    server = undefined
    if (current === undefined) return
    current.close()
    while (current.listening) await new Promise((resolve) => setTimeout(resolve, 5))
  }

  for (let attempt = 1; ; attempt++) {
    port = await freePort()
    try {
      await listen()
      break
    } catch (error) {
      if (attempt >= 3) throw error
    }
  }

  const dropAll = (): void => {
    for (const pair of pairs) {
      pair.client.resetAndDestroy()
      pair.upstream.resetAndDestroy()
    }
    pairs.clear()
  }

  return {
    host: '127.0.0.1',
    port,
    get accepted() {
      return accepted
    },
    get open() {
      return pairs.size
    },
    dropAll,
    async setRefusing(refusing: boolean) {
      if (refusing) await closeListener()
      else if (server === undefined) await listen()
    },
    setDelay(ms: number, mode: DelayMode = 'pause') {
      delayMs = ms
      delayMode = mode
    },
    async stop() {
      dropAll()
      await closeListener()
    },
  }
}
