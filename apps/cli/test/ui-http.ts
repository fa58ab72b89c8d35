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

/** The headers of a well-formed action request from the server's own page. */
export function actionHeaders(
  origin: string,
  port: number,
  token: string,
  actionToken: string,
): Record<string, string> {
  return {
    Cookie: tokenCookie(port, token),
    Origin: origin,
    'Sec-Fetch-Site': 'same-origin',
    'Content-Type': 'application/json',
    'X-Agent-State-Action-Token': actionToken,
  }
}

/**
 * What a server with actions on must refuse, each with its exact status, after a positive
 * control: a well-formed action about a run that does not exist reaches the runtime (404
 * `RUN_NOT_FOUND`), so no refusal below can pass because actions never run at all.
 */
export async function expectActionRefusals(
  origin: string,
  port: number,
  token: string,
  actionToken: string,
): Promise<void> {
  const path = '/api/action/resolve-effect'
  const body = JSON.stringify({
    run: Buffer.from('no-such-run').toString('base64url'),
    effect: Buffer.from('e').toString('base64url'),
    action: 'retry',
    reason: 'a test',
  })
  const good = actionHeaders(origin, port, token, actionToken)
  const post = (headers: Record<string, string>) =>
    http(origin, path, { method: 'POST', headers, body })
  const control = await post(good)
  expect(control.status, control.body).toBe(404)
  expect(JSON.parse(control.body).code).toBe('RUN_NOT_FOUND')
  const without = (name: string) =>
    Object.fromEntries(Object.entries(good).filter(([k]) => k !== name))
  const cases: [string, Record<string, string>, number][] = [
    ['no cookie', without('Cookie'), 401],
    ['no Origin', without('Origin'), 403],
    ['a foreign Origin', { ...good, Origin: 'http://evil.example' }, 403],
    ['a same-site page', { ...good, 'Sec-Fetch-Site': 'same-site' }, 403],
    ['a form body', { ...good, 'Content-Type': 'application/x-www-form-urlencoded' }, 415],
    ['a text body', { ...good, 'Content-Type': 'text/plain' }, 415],
    ['no action token', without('X-Agent-State-Action-Token'), 403],
    ['a wrong action token', { ...good, 'X-Agent-State-Action-Token': token }, 403],
  ]
  for (const [what, headers, status] of cases) {
    expect((await post(headers)).status, `an action with ${what}`).toBe(status)
  }
  expect((await http(origin, path, { headers: good })).status, 'an action by GET').toBe(405)
}

/** The refusal of every action by a server started without `--allow-actions`. */
export const ACTIONS_OFF =
  'actions are off: start agent-state ui with --allow-actions --operator <name>\n'

/**
 * Every action endpoint of a server without `--allow-actions` refuses a request that is
 * otherwise well-formed (there is no action token to give: a made-up one), with the guard's
 * own answer; and the page is told there are no actions.
 */
export async function expectActionsOff(origin: string, port: number, token: string): Promise<void> {
  const backend = await http(origin, '/api/backend', {
    headers: { Cookie: tokenCookie(port, token) },
  })
  expect(backend.status).toBe(200)
  expect(JSON.parse(backend.body).actions).toBeNull()
  const headers = actionHeaders(origin, port, token, token)
  for (const name of ['resolve-effect', 'close-worker', 'quarantine', 'no-such-action']) {
    for (const method of ['POST', 'GET']) {
      const answer = await http(origin, `/api/action/${name}`, {
        method,
        headers,
        ...(method === 'POST' ? { body: '{}' } : {}),
      })
      expect(answer.status, `${method} ${name}`).toBe(403)
      expect(answer.body, `${method} ${name}`).toBe(ACTIONS_OFF)
    }
  }
}
