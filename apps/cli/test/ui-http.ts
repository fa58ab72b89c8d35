import { request } from 'node:http'
import { expect } from 'vitest'

/** What one HTTP request got back. */
export interface HttpAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string | string[] | undefined>>
  readonly body: string
}

/**
 * One request with exactly the headers given (Node's `http`, not `fetch`: a test must be able
 * to send a foreign `Host` or `Origin`, as a rebinding or cross-site page would).
 */
export function http(
  origin: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${origin}${path}`,
      { method: options.method ?? 'GET', headers: options.headers ?? {} },
      (res) => {
        let body = ''
        res.setEncoding('utf8').on('data', (chunk: string) => {
          body += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

/** The cookie the server sets for the token (one name per port). */
export function tokenCookie(port: number, token: string): string {
  return `agent-state-ui-${port}=${token}`
}

/**
 * What a UI server must refuse, each with its exact status, after a positive control (the
 * right token is served), so that none of the refusals can pass because nothing is served.
 */
export async function expectRefusals(origin: string, port: number, token: string): Promise<void> {
  const cookie = tokenCookie(port, token)
  const wrong = tokenCookie(port, `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`)
  // Positive controls: the token opens the page and the API.
  const entry = await http(origin, `/?token=${token}`)
  expect(entry.status).toBe(303)
  expect(entry.headers['set-cookie']).toEqual([`${cookie}; HttpOnly; SameSite=Strict; Path=/`])
  expect((await http(origin, '/api/overview', { headers: { Cookie: cookie } })).status).toBe(200)
  // No token, on the API, the page and its script: 401.
  for (const path of ['/api/overview', '/', '/app.js', '/api/keys', '/api/events']) {
    expect((await http(origin, path)).status, `GET ${path} without a token`).toBe(401)
  }
  // A wrong token, as the cookie or in the entry URL: 403.
  expect((await http(origin, '/api/overview', { headers: { Cookie: wrong } })).status).toBe(403)
  expect((await http(origin, `/?token=${token.slice(1)}`)).status).toBe(403)
  // Another port's cookie is not this server's token.
  const otherPort = tokenCookie(port + 1, token)
  expect((await http(origin, '/api/overview', { headers: { Cookie: otherPort } })).status).toBe(401)
  // A cross-origin POST (and GET), even carrying the right cookie: 403.
  for (const method of ['POST', 'GET']) {
    const answer = await http(origin, '/api/overview', {
      method,
      headers: { Cookie: cookie, Origin: 'http://evil.example' },
      ...(method === 'POST' ? { body: '{}' } : {}),
    })
    expect(answer.status, `cross-origin ${method}`).toBe(403)
  }
  const crossSite = await http(origin, '/api/overview', {
    method: 'POST',
    headers: { Cookie: cookie, 'Sec-Fetch-Site': 'same-site' },
  })
  expect(crossSite.status).toBe(403)
  // Same origin, right token, but a POST: this server takes no action (405).
  const post = await http(origin, '/api/overview', {
    method: 'POST',
    headers: { Cookie: cookie, Origin: origin },
  })
  expect(post.status).toBe(405)
  // A foreign Host (DNS rebinding) with the right cookie: 421.
  const rebound = await http(origin, '/api/overview', {
    headers: { Cookie: cookie, Host: `evil.example:${port}` },
  })
  expect(rebound.status).toBe(421)
}
