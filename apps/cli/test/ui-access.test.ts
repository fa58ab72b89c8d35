/**
 * `agent-state ui` over HTTP: the access token, the origin and host checks, the security
 * headers, the loopback rule and credentials in the URL, on the real command (a child
 * process); and a mutant of the token comparison that the same checks catch.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createMemoryBackend } from '@agent-state/memory'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { removeTemps, runCli, tempDir } from './cli-process.js'
import { DEMO_STORY } from './demo-story.js'
import { redisUrl, services } from './services.js'
import {
  expectActionRefusals,
  expectActionsOff,
  expectRefusals,
  http,
  tokenCookie,
} from './ui-http.js'
import { startUi } from './ui-process.js'

afterAll(removeTemps)

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

/**
 * `agent-state ui` started by `start` opens a browser only with `--open`: a server started
 * without it runs no `$BROWSER` (checked once a server started after it, with `--open`, has
 * had its browser run), the one with it hands `$BROWSER` its printed address as its one
 * argument, and a browser that cannot start is one line on stderr while the server runs on.
 */
async function expectOpensOnlyWhenAsked(start: typeof startUi): Promise<void> {
  const dir = tempDir('ui-open-')
  /**
   * A stand-in browser: writes its arguments to `<name>.opened`, whole (written aside, then
   * renamed: the file never exists half-written while the test polls for it).
   */
  const browser = (name: string) => {
    const script = join(dir, `${name}.sh`)
    const opened = `${join(dir, name)}.opened`
    writeFileSync(
      script,
      `#!/bin/sh\nprintf '%s\\n' "$@" > '${opened}.part' && mv '${opened}.part' '${opened}'\n`,
    )
    chmodSync(script, 0o700)
    return { script, opened }
  }
  const url = `file:${dir}/state`
  const [quietBrowser, askedBrowser] = [browser('quiet'), browser('asked')]
  // Without --open, nothing is opened: checked once a server started after it, with --open,
  // has had its browser run (seconds later: a whole process start).
  const quiet = await start([url], { BROWSER: quietBrowser.script })
  try {
    const asked = await start([url, '--open'], { BROWSER: askedBrowser.script })
    try {
      await vi.waitFor(() => expect(existsSync(askedBrowser.opened)).toBe(true), {
        timeout: 20_000,
      })
      expect(readFileSync(askedBrowser.opened, 'utf8')).toBe(`${asked.url}\n`)
      expect(asked.output().stderr).not.toContain('could not open a browser')
    } finally {
      expect(await asked.stop()).toBe(143)
    }
  } finally {
    expect(await quiet.stop()).toBe(143)
  }
  expect(existsSync(quietBrowser.opened), 'a browser opened without --open').toBe(false)
  // A browser that cannot start: one line saying so; the server runs on.
  const missing = await start([url, '--open'], { BROWSER: join(dir, 'no-such-browser') })
  try {
    await vi.waitFor(() =>
      expect(missing.output().stderr).toContain('agent-state ui: could not open a browser ('),
    )
    const cookie = tokenCookie(missing.port, missing.token)
    const answer = await http(missing.origin, '/api/overview', { headers: { Cookie: cookie } })
    expect(answer.status).toBe(200)
  } finally {
    expect(await missing.stop()).toBe(143)
  }
}

describe('agent-state ui: access', () => {
  it('refuses every request without the right token, from another origin or host, and every POST', async () => {
    const ui = await startUi([`file:${tempDir('ui-access-')}/state`])
    try {
      expect(ui.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      expect(ui.token).toMatch(/^[A-Za-z0-9_-]{43}$/)
      await expectRefusals(ui.origin, ui.port, ui.token)
      await expectActionsOff(ui.origin, ui.port, ui.token)
      // The page, its script and the API: the same strict headers.
      const cookie = tokenCookie(ui.port, ui.token)
      for (const path of ['/', '/app.js', '/app.css', '/api/overview']) {
        const answer = await http(ui.origin, path, { headers: { Cookie: cookie } })
        expect(answer.status, path).toBe(200)
        expect(answer.headers['content-security-policy'], path).toBe(CSP)
        expect(answer.headers['x-content-type-options'], path).toBe('nosniff')
        expect(answer.headers['cache-control'], path).toBe('no-store')
      }
      const page = await http(ui.origin, '/', { headers: { Cookie: cookie } })
      // No inline script or style, nothing from elsewhere.
      expect(page.body).toMatch(/<script type="module" src="\/app\.js"><\/script>/)
      expect(page.body).not.toMatch(/<script>|<style|\sstyle=|\son[a-z]+=|https?:\/\//)
    } finally {
      expect(await ui.stop()).toBe(143)
    }
  })

  it('--allow-actions: needs --operator; every action passes the token, origin, body type and action token checks', async () => {
    const url = `file:${tempDir('ui-actions-')}/state`
    for (const [args, message] of [
      [['--allow-actions'], '--allow-actions needs --operator <name>'],
      [['--operator', 'alice'], '--operator names who acts: add --allow-actions'],
      [['--allow-actions', '--operator', 'a<b'], '--operator is 1 to 64 letters'],
    ] as const) {
      const refused = await runCli(['ui', url, ...args])
      expect([refused.status, refused.stderr], args.join(' ')).toEqual([
        2,
        expect.stringContaining(message),
      ])
    }
    const ui = await startUi([url, '--allow-actions', '--operator', 'alice'])
    try {
      expect(ui.output().stdout).toContain('actions on, as operator alice')
      const cookie = tokenCookie(ui.port, ui.token)
      const backend = JSON.parse(
        (await http(ui.origin, '/api/backend', { headers: { Cookie: cookie } })).body,
      )
      expect(backend.actions.operator).toBe('alice')
      expect(backend.actions.token).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(backend.actions.token).not.toBe(ui.token)
      await expectActionRefusals(ui.origin, ui.port, ui.token, backend.actions.token)
      // Reads are unchanged: a POST elsewhere is still refused.
      await expectRefusals(ui.origin, ui.port, ui.token)
    } finally {
      expect(await ui.stop()).toBe(143)
    }
  })

  it('opens a browser only with --open: $BROWSER gets the printed address as its one argument', async () => {
    await expectOpensOnlyWhenAsked(startUi)
  })

  it('serves a non-loopback address only with --allow-non-loopback, and warns', async () => {
    const url = `file:${tempDir('ui-host-')}/state`
    const refused = await runCli(['ui', url, '--host', '0.0.0.0'])
    expect(refused.status).toBe(2)
    expect(refused.stderr).toContain(
      'agent-state ui: --host 0.0.0.0 is not a loopback address: add --allow-non-loopback to serve it there',
    )
    const ui = await startUi([url, '--host', '0.0.0.0', '--allow-non-loopback'])
    try {
      expect(ui.output().stderr).toContain('WARNING: listening on 0.0.0.0, not a loopback address')
      // Reached through loopback, the origin check still holds against other sites.
      const origin = `http://127.0.0.1:${ui.port}`
      const cookie = tokenCookie(ui.port, ui.token)
      expect((await http(origin, '/api/overview', { headers: { Cookie: cookie } })).status).toBe(
        200,
      )
      expect((await http(origin, '/api/overview')).status).toBe(401)
      const cross = await http(origin, '/api/overview', {
        method: 'POST',
        headers: { Cookie: cookie, Origin: 'http://evil.example' },
      })
      expect(cross.status).toBe(403)
    } finally {
      await ui.stop()
    }
  })

  it('never shows the credentials of a Redis URL: not printed, not served', async () => {
    const { password } = services().redis
    const url = redisUrl()
    expect(url).toContain(password)
    const ui = await startUi([url, '--namespace', `ui-${Date.now()}`])
    try {
      const cookie = tokenCookie(ui.port, ui.token)
      const { stdout, stderr } = ui.output()
      expect(`${stdout}${stderr}`).not.toContain(password)
      expect(stdout).toContain('redis://***@')
      for (const path of ['/api/backend', '/api/overview']) {
        const answer = await http(ui.origin, path, { headers: { Cookie: cookie } })
        expect(answer.status, path).toBe(200)
        expect(answer.body, path).not.toContain(password)
        expect(JSON.parse(answer.body).url ?? JSON.parse(answer.body).backend.url).toMatch(
          /^redis:\/\/\*\*\*@127\.0\.0\.1:\d+\/0$/,
        )
      }
    } finally {
      await ui.stop()
    }
  })
})

describe('agent-state ui: the --open check catches a server that opens a browser unasked (mutant)', () => {
  it('fails on the command as if it opened a browser whatever its flags', async () => {
    // The mutant: the real command, given --open whether or not it was asked.
    const opensAlways: typeof startUi = (args, env, timeoutMs) =>
      startUi(args.includes('--open') ? args : [...args, '--open'], env, timeoutMs)
    await expect(expectOpensOnlyWhenAsked(opensAlways)).rejects.toThrow(
      /a browser opened without --open/,
    )
  })
})

describe("the demo story's closing lines catch a demo that does not offer agent-state ui (mutant)", () => {
  /** The lines `agent-state demo` closes with, as test/demo.test.ts finds them in a terminal. */
  const namespace = 'demo-20261203052700-0a1b'
  const flags = `--url 'file:./.agent-state' --namespace ${namespace}`
  const closing = [
    'every step behaved as expected (41.2 s)',
    'recovered after the kill, and why:',
    '  - the worker, from its last checkpoint: its owner had died and its lease ran out',
    'look at what it left:',
    `  agent-state sessions ${flags}`,
    `  agent-state workers ${flags}`,
    `  agent-state daemons ${flags}`,
    `  agent-state runs ${flags}`,
    `  agent-state stat workers/researcher/snapshot.json ${flags}`,
    `  agent-state stat runs/researcher-ticket/run.json ${flags}`,
    `  agent-state ls -r -l ${flags}`,
    'or all of it in a browser (read-only, on 127.0.0.1; Ctrl-C stops it):',
    `  agent-state ui ${flags}`,
    '  (to resolve effects or close workers from it: add --allow-actions --operator <you>)',
  ]
  /** The story's lines from the closing on (`every step behaved as expected`), each matched. */
  const expectClosing = (text: string) => {
    const from = DEMO_STORY.findIndex((line) => line.source.startsWith('^every step behaved'))
    expect(from).toBeGreaterThan(0)
    for (const line of DEMO_STORY.slice(from)) expect(text, `closing: ${line}`).toMatch(line)
  }

  it('pass on the closing lines, fail on them without the ui offer', () => {
    expectClosing(closing.join('\n'))
    // The mutant: the closing as it was before the inspector, without its three lines.
    const withoutUi = closing.filter((line) => !/browser|agent-state ui |allow-actions/.test(line))
    expect(withoutUi).toHaveLength(closing.length - 3)
    expect(() => expectClosing(withoutUi.join('\n'))).toThrow(
      /closing: \/\^or all of it in a browser/,
    )
  })
})

describe('agent-state ui: the access checks catch a broken token comparison (mutant)', () => {
  it('fails on a server whose comparison accepts any token', async () => {
    vi.resetModules()
    vi.doMock('../src/ui/access-token.js', async (original) => ({
      ...(await original<typeof import('../src/ui/access-token.js')>()),
      tokenMatches: () => true,
    }))
    try {
      const { startUiServer } = await import('../src/ui/ui-server.js')
      const backend = createMemoryBackend()
      const server = await startUiServer({
        backend,
        info: {
          url: 'memory:',
          namespace: 'default',
          name: backend.name,
          capabilities: backend.capabilities,
        },
        host: '127.0.0.1',
        port: 0,
      })
      try {
        const token = new URL(server.url).searchParams.get('token') ?? ''
        // The mutant serves a wrong token: the refusal checks must fail, on exactly that.
        await expect(expectRefusals(server.origin, server.port, token)).rejects.toThrow(
          /expected 200 to be 403/,
        )
      } finally {
        await server.close()
        await backend.close()
      }
    } finally {
      vi.doUnmock('../src/ui/access-token.js')
      vi.resetModules()
    }
  })
})

describe('agent-state ui: the action checks catch a broken guard (mutants)', () => {
  type Guard = typeof import('../src/ui/action-guard.js')
  type Headers = Parameters<Guard['actionRefusal']>[0]
  type Context = Parameters<Guard['actionRefusal']>[1]
  const MUTANTS: [string, (h: Headers, c: Context) => [Headers, Context], boolean, RegExp][] = [
    [
      'ignores the action token',
      (h, c) => [{ ...h, actionToken: c.actionToken }, c],
      true,
      /an action with no action token: expected 404 to be 403/,
    ],
    [
      'ignores the Origin',
      (h, c) => [{ ...h, origin: c.origin }, c],
      true,
      /an action with no Origin: expected 404 to be 403/,
    ],
    [
      'takes any body type',
      (h, c) => [{ ...h, contentType: 'application/json' }, c],
      true,
      /an action with a form body: expected (400|404) to be 415/,
    ],
    [
      'ignores --allow-actions',
      (h, c) => [h, { ...c, enabled: true }],
      false,
      /POST resolve-effect: expected 'the action token is missing or wrong/,
    ],
  ]
  for (const [name, mutate, enabled, failure] of MUTANTS) {
    it(`fails on a guard that ${name}`, async () => {
      vi.resetModules()
      vi.doMock('../src/ui/action-guard.js', async (original) => {
        const real = await original<Guard>()
        return {
          ...real,
          actionRefusal: (h: Headers, c: Context) => real.actionRefusal(...mutate(h, c)),
        }
      })
      try {
        const { startUiServer } = await import('../src/ui/ui-server.js')
        const backend = createMemoryBackend()
        const server = await startUiServer({
          backend,
          info: {
            url: 'memory:',
            namespace: 'default',
            name: backend.name,
            capabilities: backend.capabilities,
          },
          host: '127.0.0.1',
          port: 0,
          ...(enabled ? { actions: { operator: 'mallory', report: () => undefined } } : {}),
        })
        try {
          const token = new URL(server.url).searchParams.get('token') ?? ''
          const check = async () => {
            if (!enabled) return expectActionsOff(server.origin, server.port, token)
            const info = await http(server.origin, '/api/backend', {
              headers: { Cookie: tokenCookie(server.port, token) },
            })
            return expectActionRefusals(
              server.origin,
              server.port,
              token,
              JSON.parse(info.body).actions.token,
            )
          }
          await expect(check()).rejects.toThrow(failure)
        } finally {
          await server.close()
          await backend.close()
        }
      } finally {
        vi.doUnmock('../src/ui/action-guard.js')
        vi.resetModules()
      }
    })
  }
})
