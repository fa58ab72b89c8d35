import { createServer, type IncomingMessage, request, type Server } from 'node:http'
import type { Socket } from 'node:net'

/**
 * What the proxy does with one request:
 * - `pass`: forward it and relay the answer;
 * - `apply-then-drop`: forward it, let the server apply it, then cut the
 *   client's connection instead of answering (the answer is lost);
 * - `drop`: cut the client's connection without forwarding anything.
 */
export type FaultAction = 'pass' | 'apply-then-drop' | 'drop'

/** A loopback HTTP proxy in front of the real RGW that loses answers on demand. */
export interface HttpFaultProxy {
  readonly endpoint: string
  /** Requests that reached the server (forwarded). */
  readonly forwarded: number
  /** Decides each request's fate from its method and path. */
  setRule(rule: (method: string, path: string) => FaultAction | Promise<FaultAction>): void
  stop(): Promise<void>
}

/**
 * Starts the proxy on 127.0.0.1 (a kernel-chosen port). Headers go through
 * unchanged, so SigV4 signatures (which cover the proxy's Host) stay valid.
 */
export async function startHttpFaultProxy(target: string): Promise<HttpFaultProxy> {
  const upstream = new URL(target)
  let rule: (method: string, path: string) => FaultAction | Promise<FaultAction> = () => 'pass'
  let forwarded = 0
  const sockets = new Set<Socket>()
  const server: Server = createServer((incoming: IncomingMessage, outgoing) => {
    // The rule sees the path without the query (the SDK adds `?x-id=PutObject`).
    const path = (incoming.url ?? '/').split('?')[0] ?? '/'
    const decided = Promise.resolve(rule(incoming.method ?? 'GET', decodeURIComponent(path)))
    const chunks: Buffer[] = []
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk))
    incoming.on('end', async () => {
      const action = await decided
      if (action === 'drop') {
        incoming.socket.destroy()
        return
      }
      forwarded++
      const forward = request(
        {
          host: upstream.hostname,
          port: Number(upstream.port),
          method: incoming.method,
          path: incoming.url,
          headers: incoming.headers,
        },
        (answer) => {
          const body: Buffer[] = []
          answer.on('data', (chunk: Buffer) => body.push(chunk))
          answer.on('end', () => {
            if (action === 'apply-then-drop') {
              incoming.socket.destroy()
              return
            }
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
            outgoing.end(Buffer.concat(body))
          })
        },
      )
      forward.on('error', () => incoming.socket.destroy())
      forward.end(Buffer.concat(chunks))
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    endpoint: `http://127.0.0.1:${port}`,
    get forwarded() {
      return forwarded
    },
    setRule(next) {
      rule = next
    },
    async stop() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
