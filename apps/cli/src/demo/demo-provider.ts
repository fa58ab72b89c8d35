/**
 * The demo's external "provider" (a ticket tracker), run as its own process:
 * a tiny HTTP server that applies `POST /apply` and records it by its
 * `idempotency-key` header, answers `GET /status/<key>` with
 * `{"status":"confirmed","result":...}` or `{"status":"absent"}`, and
 * `GET /log` with how often each key was applied. It never deduplicates, so a
 * repeated dispatch would show as a count of 2.
 *
 * A request with `x-hold: 1` is applied at once and never answered: the demo
 * kills the caller while it waits, after the provider applied the effect and
 * before the caller could record it. Prints `{"event":"listening","port":n}`.
 *
 * Fault injection for the demo's own tests: with
 * `AGENT_STATE_DEMO_PROVIDER_FAULT=forget-lookups` every lookup answers
 * `absent`, a provider that cannot vouch for what it applied; the demo must
 * then fail rather than report a recovery that did not happen.
 */
import { createServer } from 'node:http'

const applied = new Map<string, number>()
const results = new Map<string, unknown>()
const forgetLookups = process.env.AGENT_STATE_DEMO_PROVIDER_FAULT === 'forget-lookups'

const server = createServer((req, res) => {
  let body = ''
  req.on('data', (chunk: Buffer) => {
    body += chunk.toString()
  })
  req.on('end', () => {
    const send = (status: number, value: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' })
      res.end(JSON.stringify(value))
    }
    const url = req.url ?? '/'
    if (req.method === 'POST' && url === '/apply') {
      const key = String(req.headers['idempotency-key'] ?? '')
      if (key === '') return send(400, { error: 'idempotency-key required' })
      const count = (applied.get(key) ?? 0) + 1
      applied.set(key, count)
      const request = JSON.parse(body || 'null') as unknown
      const result = { ticket: `T-${100 + results.size + 1}`, request }
      if (!results.has(key)) results.set(key, result)
      // Held requests stay open until the caller goes away (the demo kills it).
      if (req.headers['x-hold'] === '1') return
      return send(200, { result: results.get(key) })
    }
    if (req.method === 'GET' && url.startsWith('/status/')) {
      const key = decodeURIComponent(url.slice('/status/'.length))
      return results.has(key) && !forgetLookups
        ? send(200, { status: 'confirmed', result: results.get(key) })
        : send(200, { status: 'absent' })
    }
    if (req.method === 'GET' && url === '/log') {
      return send(200, { applied: Object.fromEntries(applied) })
    }
    send(404, { error: 'not found' })
  })
})

server.keepAliveTimeout = 120_000
server.headersTimeout = 121_000
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  process.stdout.write(`${JSON.stringify({ pid: process.pid, event: 'listening', port })}\n`)
})
process.on('SIGTERM', () => process.exit(0))
