import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { freePort } from '@agent-state/test-services'

/** A private npm registry (Verdaccio) for the release rehearsal. */
export interface PrivateRegistry {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string
  /** A token of the registry's one user, for publishing. */
  readonly token: string
  /** The npmrc lines that send the `@agent-state` scope (only) to this registry, with the token. */
  npmrc(): string
  /** Stops the server. */
  stop(): Promise<void>
}

/**
 * Starts Verdaccio 6.8.0 (this suite's dev dependency) on a free 127.0.0.1 port, its storage and
 * its users under `dir`, with no uplink: what it serves is exactly what was published to it.
 * Every package is readable by anyone and publishable by its one user, created here through the
 * registry's own API (`PUT /-/user/org.couchdb.user:<name>`, what `npm adduser` does).
 */
export async function startRegistry(dir: string): Promise<PrivateRegistry> {
  const bin = join(
    createRequire(import.meta.url).resolve('verdaccio/package.json'),
    '..',
    'bin',
    'verdaccio',
  )
  mkdirSync(join(dir, 'storage'), { recursive: true })
  const config = join(dir, 'config.yaml')
  writeFileSync(
    config,
    [
      `storage: ${join(dir, 'storage')}`,
      'auth:',
      '  htpasswd:',
      `    file: ${join(dir, 'htpasswd')}`,
      '    max_users: 1',
      'uplinks: {}',
      'packages:',
      "  '**':",
      '    access: $all',
      '    publish: $authenticated',
      'log: { type: stdout, format: pretty, level: warn }',
      '',
    ].join('\n'),
  )
  const port = await freePort()
  const url = `http://127.0.0.1:${port}/`
  let log = ''
  const child: ChildProcess = spawn(
    process.execPath,
    [bin, '--config', config, '--listen', `127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    log += chunk
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    log += chunk
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
  }
  try {
    const deadline = Date.now() + 60_000
    for (;;) {
      if (child.exitCode !== null) throw new Error(`verdaccio exited (${child.exitCode}):\n${log}`)
      const ping = await fetch(`${url}-/ping`).catch(() => undefined)
      if (ping?.ok === true) break
      if (Date.now() > deadline) throw new Error(`verdaccio did not answer within 60 s:\n${log}`)
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    const created = await fetch(`${url}-/user/org.couchdb.user:rehearsal`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'rehearsal', password: 'rehearsal-password' }),
    })
    const body = (await created.json()) as { token?: string }
    if (!created.ok || body.token === undefined) {
      throw new Error(`verdaccio refused the user: ${created.status} ${JSON.stringify(body)}`)
    }
    const token = body.token
    const host = `//127.0.0.1:${port}/`
    return {
      url,
      token,
      npmrc: () => `@agent-state:registry=${url}\n${host}:_authToken=${token}\n`,
      stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}
