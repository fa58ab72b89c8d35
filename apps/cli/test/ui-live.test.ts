/**
 * `agent-state ui`'s event stream on a backend without change notification, and its cap on
 * listeners, on the UI server in process (memory backend; the stream, not the backend, is
 * under test): a page is told of a change by the 5 s timer, and a seventeenth stream is
 * refused (503) until one of the sixteen closes. Two committed mutants of the change feed (a
 * timer that never tells, no cap) fail the same checks.
 */
import { type IncomingMessage, request } from 'node:http'
import type { Backend } from '@agent-state/core'
import { createMemoryBackend } from '@agent-state/memory'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { tokenCookie } from './ui-http.js'

type ServerModule = typeof import('../src/ui/ui-server.js')
type FeedModule = typeof import('../src/ui/change-feed.js')

/** A backend that does not offer `watch`, as S3's: the feed must poll. */
function withoutWatch(backend: Backend): Backend {
  return new Proxy(backend, {
    get(target, property, receiver) {
      if (property === 'watch') return undefined
      const value = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/** One open event stream: what it has received so far, and how to close it. */
interface Stream {
  readonly status: number
  text(): string
  close(): void
}

function openStream(origin: string, cookie: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}/api/events`, { headers: { Cookie: cookie } })
    req.on('response', (res: IncomingMessage) => {
      let text = ''
      res.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk
      })
      res.on('error', () => undefined)
      resolve({ status: res.statusCode ?? 0, text: () => text, close: () => req.destroy() })
    })
    req.on('error', reject)
    req.end()
  })
}

const backends: Backend[] = []
afterAll(async () => {
  for (const backend of backends) await backend.close()
})

/** Starts the server of `load` on a fresh memory namespace without `watch`. */
async function serve(load: () => Promise<ServerModule>) {
  const raw = createMemoryBackend({ namespace: `ui-live-${backends.length}` })
  backends.push(raw)
  const backend = withoutWatch(raw)
  const { startUiServer } = await load()
  const server = await startUiServer({
    backend,
    info: { url: 'memory:', namespace: 'default', name: raw.name, capabilities: raw.capabilities },
    host: '127.0.0.1',
    port: 0,
  })
  const token = new URL(server.url).searchParams.get('token') ?? ''
  return { server, raw, cookie: tokenCookie(server.port, token) }
}

/**
 * A stream on a backend without `watch` says `poll` and, after a write, is told `change`
 * within 8 s (the timer's 5 s, with room for a loaded machine).
 */
async function expectPolledChange(load: () => Promise<ServerModule>): Promise<void> {
  const { server, raw, cookie } = await serve(load)
  const stream = await openStream(server.origin, cookie)
  try {
    expect(stream.status).toBe(200)
    await vi.waitFor(() => expect(stream.text()).toContain('event: hello\ndata: {"mode":"poll"}'))
    await raw.put('a', new TextEncoder().encode('1'))
    await vi.waitFor(() => expect(stream.text(), 'polled change').toContain('event: change'), {
      timeout: 8000,
      interval: 100,
    })
  } finally {
    stream.close()
    await server.close()
  }
}

/** Sixteen streams are served, a seventeenth is refused (503), and served once one closed. */
async function expectStreamCap(load: () => Promise<ServerModule>): Promise<void> {
  const { server, cookie } = await serve(load)
  const streams: Stream[] = []
  try {
    for (let i = 0; i < 16; i++) streams.push(await openStream(server.origin, cookie))
    expect(streams.map((s) => s.status)).toEqual(Array(16).fill(200))
    const refused = await openStream(server.origin, cookie)
    streams.push(refused)
    expect(refused.status, 'the 17th stream').toBe(503)
    streams[0]?.close()
    await vi.waitFor(async () => {
      const again = await openStream(server.origin, cookie)
      streams.push(again)
      expect(again.status).toBe(200)
    })
  } finally {
    for (const s of streams) s.close()
    await server.close()
  }
}

const real = () => import('../src/ui/ui-server.js')

/** The server with `change-feed.ts` replaced by `mutate(real)`. */
async function withMutatedFeed(
  mutate: (feed: FeedModule) => Partial<FeedModule>,
  check: (load: () => Promise<ServerModule>) => Promise<void>,
): Promise<void> {
  vi.resetModules()
  vi.doMock('../src/ui/change-feed.js', async (original) => {
    const feed = await original<FeedModule>()
    return { ...feed, ...mutate(feed) }
  })
  try {
    await check(() => import('../src/ui/ui-server.js'))
  } finally {
    vi.doUnmock('../src/ui/change-feed.js')
    vi.resetModules()
  }
}

describe('agent-state ui: the event stream without change notification, and its cap', () => {
  it('tells a page of a change by polling every 5 s', async () => {
    await expectPolledChange(real)
  })

  it('serves at most 16 streams at once', async () => {
    await expectStreamCap(real)
  })

  it('the polling check fails on a feed whose timer never tells (mutant)', async () => {
    await withMutatedFeed(
      (feed) => ({
        createChangeFeed: (backend) => {
          const inner = feed.createChangeFeed(backend)
          return {
            get mode() {
              return inner.mode
            },
            get size() {
              return inner.size
            },
            subscribe: () => inner.subscribe(() => undefined),
          }
        },
      }),
      async (load) => {
        await expect(expectPolledChange(load)).rejects.toThrow(/polled change/)
      },
    )
  })

  it('the cap check fails on a server without a cap (mutant)', async () => {
    await withMutatedFeed(
      // The constant's type is its value: a mutant is a different module, so cast it.
      () => ({ MAX_STREAMS: Number.POSITIVE_INFINITY as FeedModule['MAX_STREAMS'] }),
      async (load) => {
        await expect(expectStreamCap(load)).rejects.toThrow(/the 17th stream/)
      },
    )
  })
})
