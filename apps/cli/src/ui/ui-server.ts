import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Backend, isAgentStateError, redactUrl } from '@agent-state/core'
import { describeFailure } from '../failure.js'
import { newAccessToken, tokenMatches } from './access-token.js'
import { ACTION_TOKEN_HEADER, actionRefusal } from './action-guard.js'
import { createChangeFeed, MAX_STREAMS } from './change-feed.js'
import { ACTION_NAMES, runAction } from './ui-actions.js'
import {
  type BackendInfo,
  daemonDetail,
  forDisplay,
  keyDetail,
  keyPage,
  LIST_VIEWS,
  listView,
  overview,
  runDetail,
  sessionDetail,
  textOfRef,
  workerDetail,
} from './ui-data.js'

/**
 * The page's Content-Security-Policy: everything from this server only, no inline script or
 * style, no plugins, no framing, no form posts. So even a value that reached the DOM as
 * markup could neither run a script nor load anything from elsewhere.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/**
 * Where the page's files are: `src/ui/assets/`, which the package publishes with its sources.
 * Next to this module when it runs from the sources; from `dist/ui/` (built), two levels up.
 */
function assetsDir(): URL {
  const here = new URL('./assets/', import.meta.url)
  return existsSync(new URL('index.html', here))
    ? here
    : new URL('../../src/ui/assets/', import.meta.url)
}

/** The static files of the page (see {@link assetsDir}). */
const ASSETS: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
}

/** Options of {@link startUiServer}. */
export interface UiServerOptions {
  readonly backend: Backend
  readonly info: BackendInfo
  /** Address to listen on; `127.0.0.1` unless the operator asked otherwise. */
  readonly host: string
  /** Port; 0 picks a free one. */
  readonly port: number
  /** The access token; a fresh random one when absent. */
  readonly token?: string
  /**
   * Operator actions (`--allow-actions`): who acts, and where each done action is reported
   * (the command prints it). Absent: every action endpoint refuses (403).
   */
  readonly actions?: {
    readonly operator: string
    readonly report: (line: string) => void
  }
}

/** The largest action body read (a confirmation's result included). */
const MAX_ACTION_BODY_BYTES = 64 * 1024

/** Error codes of an action that name something missing (404); other refusals are 409. */
const MISSING_CODES = new Set([
  'RUN_NOT_FOUND',
  'RUN_RECORD_MISSING',
  'SNAPSHOT_MISSING',
  'NOT_FOUND',
])

function header(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined
}

/** The request's body as JSON text, at most {@link MAX_ACTION_BODY_BYTES}; `null` past it. */
async function readBody(req: IncomingMessage): Promise<string | null> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_ACTION_BODY_BYTES) return null
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** A running UI server. */
export interface UiServer {
  /** The address with the token, to open in a browser (`http://127.0.0.1:port/?token=…`). */
  readonly url: string
  /** The origin the page runs at. */
  readonly origin: string
  readonly port: number
  close(): Promise<void>
}

/** Whether a host name is a loopback address (only those are served without `--allow-non-loopback`). */
export function isLoopbackHost(host: string): boolean {
  return (
    host === 'localhost' ||
    host === '::1' ||
    host === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
  )
}

function cookieName(port: number): string {
  // Cookies are shared by every port of a host: one name per port, so two UIs never mix.
  return `agent-state-ui-${port}`
}

function cookieToken(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim()
  }
  return undefined
}

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
}

function send(
  res: ServerResponse,
  status: number,
  type: string,
  body: string | Buffer,
  extra: Record<string, string> = {},
): void {
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'Content-Type': type,
    'Content-Length': String(Buffer.byteLength(body)),
    ...extra,
  })
  res.end(body)
}

function refuse(res: ServerResponse, status: number, message: string): void {
  send(res, status, 'text/plain; charset=utf-8', `${message}\n`)
}

/**
 * Starts the UI's HTTP server (Node's own `http`: a handful of routes needs no framework).
 * Every request passes, in order: the Host check (on a loopback address, against DNS
 * rebinding), the Origin check (a request another site's page sent is refused, whatever it
 * carries), the token (missing: 401; wrong: 403), then only GET and HEAD are served (there
 * is no action to POST, except the operator actions, see {@link actionRefusal}). The token reaches the server once, in the printed URL's `?token=`;
 * the server answers with an HttpOnly, SameSite=Strict cookie and a redirect that drops it
 * from the address bar, so it is in no later URL, Referer or history entry.
 */
export async function startUiServer(options: UiServerOptions): Promise<UiServer> {
  const token = options.token ?? newAccessToken()
  // A second secret, for actions only: handed to this server's own page by `/api/backend`
  // and required in a header of every action (see action-guard.ts).
  const actionToken = newAccessToken()
  const assets = assetsDir()
  let port = 0
  const allowedHosts = new Set<string>()

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const host = req.headers.host ?? ''
    if (allowedHosts.size > 0 && !allowedHosts.has(host)) {
      refuse(res, 421, 'this server answers only to its own address')
      return
    }
    // The page's own origin is the address the browser reached: with the Host check above
    // (loopback), exactly this server's; on another interface, whatever name reached it.
    const fromOrigin = req.headers.origin
    const site = req.headers['sec-fetch-site']
    if (
      (fromOrigin !== undefined && fromOrigin !== `http://${host}`) ||
      (typeof site === 'string' && site !== 'same-origin' && site !== 'none')
    ) {
      refuse(res, 403, 'cross-origin request refused')
      return
    }
    const url = new URL(req.url ?? '/', 'http://ui.invalid')
    const name = cookieName(port)
    const queryToken = url.pathname === '/' ? url.searchParams.get('token') : null
    const presented = queryToken ?? cookieToken(req, name)
    if (presented === undefined || presented === '') {
      refuse(res, 401, 'the access token is missing: open the URL the command printed')
      return
    }
    if (!tokenMatches(token, presented)) {
      refuse(res, 403, 'wrong access token')
      return
    }
    const action = /^\/api\/action\/([a-z-]+)$/.exec(url.pathname)?.[1]
    if (action !== undefined) {
      await act(req, res, action, `http://${host}`)
      return
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      refuse(res, 405, 'read-only: this server takes no action')
      return
    }
    if (queryToken !== null) {
      // Keep the token in an HttpOnly cookie and out of the address bar.
      send(res, 303, 'text/plain; charset=utf-8', 'see /\n', {
        Location: '/',
        'Set-Cookie': `${name}=${token}; HttpOnly; SameSite=Strict; Path=/`,
      })
      return
    }
    if (url.pathname === '/api/events') {
      stream(req, res)
      return
    }
    const asset = ASSETS[url.pathname]
    if (asset !== undefined) {
      send(res, 200, asset.type, await readFile(new URL(asset.file, assets)))
      return
    }
    const answer = await api(url)
    if (answer === null) refuse(res, 404, 'not found')
    else send(res, 200, 'application/json; charset=utf-8', JSON.stringify(answer))
  }

  const feed = createChangeFeed(options.backend)
  /**
   * The event stream (server-sent events) a page listens to: `hello` with the feed's mode,
   * then `change` whenever the state may have changed; a page re-reads its view then.
   */
  const stream = (req: IncomingMessage, res: ServerResponse): void => {
    if (feed.size >= MAX_STREAMS) {
      refuse(res, 503, `at most ${MAX_STREAMS} pages listen at once`)
      return
    }
    res.writeHead(200, { ...SECURITY_HEADERS, 'Content-Type': 'text/event-stream' })
    res.write(`event: hello\ndata: ${JSON.stringify({ mode: feed.mode })}\n\n`)
    const unsubscribe = feed.subscribe(() => res.write('event: change\ndata: {}\n\n'))
    req.on('close', unsubscribe)
  }

  /** One operator action: the guard, then the body, then the runtime's operation. */
  const act = async (
    req: IncomingMessage,
    res: ServerResponse,
    name: string,
    origin: string,
  ): Promise<void> => {
    const refusal = actionRefusal(
      {
        method: req.method ?? '',
        origin: header(req.headers.origin),
        secFetchSite: header(req.headers['sec-fetch-site']),
        contentType: header(req.headers['content-type']),
        actionToken: header(req.headers[ACTION_TOKEN_HEADER]),
      },
      { enabled: options.actions !== undefined, origin, actionToken },
    )
    if (refusal !== null || options.actions === undefined) {
      refuse(res, refusal?.status ?? 403, refusal?.message ?? 'actions are off')
      return
    }
    if (!(ACTION_NAMES as readonly string[]).includes(name)) {
      refuse(res, 404, 'no such action')
      return
    }
    const text = await readBody(req)
    if (text === null) {
      refuse(res, 413, `an action's body is at most ${MAX_ACTION_BODY_BYTES} bytes`)
      return
    }
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      body = null
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      refuse(res, 400, "an action's body is a JSON object")
      return
    }
    const answer = (status: number, value: unknown) =>
      send(res, status, 'application/json; charset=utf-8', JSON.stringify(forDisplay(value)))
    const { operator, report } = options.actions
    try {
      const done = await runAction(options.backend, name, body as Record<string, unknown>, operator)
      report(done)
      answer(200, { done })
    } catch (error) {
      if (!isAgentStateError(error)) throw error
      const { message } = describeFailure(error, [options.info.url])
      const status =
        error.code === 'INVALID_ARGUMENT' ? 400 : MISSING_CODES.has(error.code) ? 404 : 409
      answer(status, { error: message, code: error.code })
    }
  }

  const api = async (url: URL): Promise<unknown> => {
    const { backend, info } = options
    const param = (name: string) => url.searchParams.get(name)
    if (url.pathname === '/api/backend') {
      const actions =
        options.actions === undefined
          ? null
          : { operator: options.actions.operator, token: actionToken }
      return forDisplay({ ...info, url: redactUrl(info.url), actions })
    }
    if (url.pathname === '/api/overview') return overview(backend, info)
    if (url.pathname === '/api/keys') {
      const cursor = param('cursor')
      return keyPage(
        backend,
        textOfRef(param('prefix') ?? ''),
        cursor === null ? undefined : textOfRef(cursor),
      )
    }
    if (url.pathname === '/api/key') {
      const ref = param('ref')
      return ref === null ? null : keyDetail(backend, textOfRef(ref))
    }
    if (url.pathname === '/api/session') {
      const ref = param('ref')
      const cursor = param('cursor')
      return ref === null
        ? null
        : sessionDetail(backend, textOfRef(ref), cursor === null ? undefined : textOfRef(cursor))
    }
    if (url.pathname === '/api/daemon') {
      const ref = param('ref')
      return ref === null ? null : daemonDetail(backend, textOfRef(ref))
    }
    if (url.pathname === '/api/run' || url.pathname === '/api/worker') {
      const ref = param('ref')
      if (ref === null) return null
      const id = textOfRef(ref)
      if (url.pathname === '/api/worker') return workerDetail(backend, id)
      const cursor = param('effects')
      const state = param('state')
      // The newest step of the page of steps asked for: a positive integer, else the newest.
      const steps = /^[1-9]\d{0,9}$/.test(param('steps') ?? '') ? Number(param('steps')) : null
      return runDetail(backend, id, {
        ...(cursor === null ? {} : { cursor: textOfRef(cursor) }),
        ...(state === null ? {} : { state }),
        ...(steps === null ? {} : { steps }),
      })
    }
    const view = /^\/api\/view\/([a-z]+)$/.exec(url.pathname)?.[1]
    if (view !== undefined && LIST_VIEWS.includes(view)) return listView(backend, view)
    return null
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      // One failed read is one failed answer, never a crashed server; the message is the
      // CLI's (credentials of the URL removed), escaped like every other string.
      const { message } = describeFailure(error, [options.info.url])
      // A key the backend refuses (too long, a control character) is the request's fault.
      const status = isAgentStateError(error, 'INVALID_ARGUMENT') ? 400 : 500
      if (!res.headersSent) {
        send(
          res,
          status,
          'application/json; charset=utf-8',
          JSON.stringify(forDisplay({ error: message })),
        )
      } else res.destroy()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  port = (server.address() as AddressInfo).port
  const hostPart =
    options.host.includes(':') && !options.host.startsWith('[') ? `[${options.host}]` : options.host
  const origin = `http://${hostPart}:${port}`
  if (isLoopbackHost(options.host)) {
    allowedHosts.add(`${hostPart}:${port}`)
    allowedHosts.add(`localhost:${port}`)
  }
  return {
    url: `${origin}/?token=${token}`,
    origin,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
