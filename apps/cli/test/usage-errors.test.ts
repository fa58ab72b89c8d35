import { createServer, type Server, type Socket } from 'node:net'
import { freePort } from '@agent-state/test-services'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { removeTemps, runCli, tempDir } from './cli-process.js'
import { redisUrl, s3Env, s3Url, services } from './services.js'

afterAll(removeTemps)

const COMMANDS = [
  'demo',
  'verify',
  'ls',
  'cat',
  'stat',
  'sessions',
  'workers',
  'daemons',
  'runs',
  'wakes',
  'copy',
  'quarantine',
  'quarantine worker',
  'quarantine key',
  'quarantine list',
  'ui',
]

/**
 * The `--module` line of a help text's "Global Options:" section (the program's options shown
 * in a command's help), or `undefined` when that section does not list it.
 */
function globalModuleOption(help: string): string | undefined {
  const section = help.split(/^Global Options:$/m)[1]
  return section?.split('\n').find((line) => line.trimStart().startsWith('--module <'))
}

/** The last non-empty line of stderr, and how many non-empty lines it had. */
function errorLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.trim() !== '')
}

describe('help and usage', () => {
  it('prints --help for the program and every command, exit 0', async () => {
    const root = await runCli(['--help'])
    expect(root.status).toBe(0)
    for (const name of COMMANDS) expect(root.stdout).toContain(name.split(' ')[0])
    expect(root.stdout).toContain('Exit codes:')
    for (const name of COMMANDS) {
      const result = await runCli([...name.split(' '), '--help'])
      expect(result.status, name).toBe(0)
      expect(result.stdout).toContain(`Usage: agent-state ${name}`)
      // A third party reading only `verify --help` finds how to verify their backend.
      expect(globalModuleOption(result.stdout), `${name} --help`).toBeDefined()
    }
  })

  it('the Global Options check fails on a help that lists --module only as its own option', async () => {
    // The mutant: the program's own help names --module under "Options:", as every command's help
    // did before they showed the global options; the check must not take it for a global one.
    const root = await runCli(['--help'])
    expect(root.stdout).toContain('--module <path-or-package>')
    expect(globalModuleOption(root.stdout)).toBeUndefined()
  })

  it('exits 2 with one line for an unknown command, a bad flag, a bad value and no command', async () => {
    for (const args of [
      ['frobnicate'],
      ['ls', '--bogus'],
      ['copy', 'memory:'],
      ['ls', '--limit', 'zero'],
      ['verify', 'memory:', 'extra'],
      ['ls', '--json', '--jsonl', '--url', 'memory:'],
      ['quarantine', 'bogus'],
      ['quarantine', 'worker', 'w1', '--url', 'memory:'],
    ]) {
      const result = await runCli(args)
      expect(result.status, args.join(' ')).toBe(2)
      expect(errorLines(result.stderr).length, `${args.join(' ')}: ${result.stderr}`).toBe(1)
    }
    const none = await runCli([])
    expect(none.status).toBe(2)
    expect(none.stderr).toContain('Usage: agent-state')
  })
})

describe('bad backends: one clear line, a distinct exit code, bounded time', () => {
  let silent: Server
  let silentPort: number
  const sockets: Socket[] = []
  beforeAll(async () => {
    // Accepts connections and never answers: the hang a client must not inherit.
    silent = createServer((socket) => {
      sockets.push(socket)
      socket.on('error', () => undefined)
    })
    silentPort = await freePort()
    await new Promise<void>((resolve) => silent.listen(silentPort, '127.0.0.1', resolve))
  })
  afterAll(() => {
    for (const socket of sockets) socket.destroy()
    silent.close()
  })

  it('an unknown scheme is a usage error naming the URL, without a stack trace', async () => {
    const result = await runCli(['ls', '--url', 'ftp://host/x'])
    expect(result.status).toBe(2)
    const lines = errorLines(result.stderr)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^agent-state ls: .*Unknown backend URL "ftp:\/\/host\/x"/)
  })

  it('a refused connection is exit 3, one line, the password never printed', async () => {
    const port = await freePort()
    for (const command of [['ls'], ['sessions'], ['stat', 'k']]) {
      const result = await runCli([
        ...command,
        '--url',
        `redis://agent:s3cr3t-pw@127.0.0.1:${port}/0?connectTimeoutMs=500`,
      ])
      expect(result.status, command[0]).toBe(3)
      const lines = errorLines(result.stderr)
      expect(lines, result.stderr).toHaveLength(1)
      expect(lines[0]).toContain(`redis://***@127.0.0.1:${port}/0`)
      expect(result.stderr + result.stdout).not.toContain('s3cr3t-pw')
    }
  })

  it('a wrong Redis password is exit 3, one line, the password never printed', async () => {
    const result = await runCli(['ls', '--url', redisUrl('wrong-pw-xyz')])
    expect(result.status).toBe(3)
    const lines = errorLines(result.stderr)
    expect(lines, result.stderr).toHaveLength(1)
    expect(lines[0]).toMatch(/authentication/i)
    expect(result.stderr + result.stdout).not.toContain('wrong-pw-xyz')
    expect(result.stderr + result.stdout).not.toContain(services().redis.password)
  })

  it('a server that accepts and never answers is exit 3 within --timeout, not a hang', async () => {
    const redis = await runCli(
      ['ls', '--timeout', '1500', '--url', `redis://127.0.0.1:${silentPort}/0`],
      {
        timeoutMs: 60_000,
      },
    )
    expect(redis.status).toBe(3)
    expect(errorLines(redis.stderr)).toHaveLength(1)
    expect(redis.stderr).toMatch(/no answer within 1500 ms|UNAVAILABLE|INDETERMINATE/)
    const s3 = await runCli(
      [
        'ls',
        '--timeout',
        '1500',
        '--url',
        `s3://bucket/p?endpoint=http://127.0.0.1:${silentPort}&region=us-east-1&forcePathStyle=true`,
      ],
      { timeoutMs: 60_000, env: s3Env() },
    )
    expect(s3.status).toBe(3)
    expect(errorLines(s3.stderr), s3.stderr).toHaveLength(1)
  })

  it('a missing S3 bucket is exit 3 with one line saying so', async () => {
    const url = s3Url('no-such-bucket-cli', false)
    const result = await runCli(['ls', '--url', url], { env: s3Env() })
    expect(result.status).toBe(3)
    const lines = errorLines(result.stderr)
    expect(lines, result.stderr).toHaveLength(1)
    expect(lines[0]).toContain('bucket does not exist')
  })

  it('a missing key is exit 4, an invalid key exit 2', async () => {
    const url = `file:${tempDir('agent-state-cli-missing-')}/state`
    const cat = await runCli(['cat', 'no/such/key', '--url', url])
    expect(cat.status).toBe(4)
    expect(errorLines(cat.stderr)).toEqual(['agent-state cat: no value at key "no/such/key"'])
    const stat = await runCli(['stat', 'no/such/key', '--url', url])
    expect(stat.status).toBe(4)
    const bad = await runCli(['cat', 'a//b', '--url', url])
    expect(bad.status).toBe(2)
    expect(errorLines(bad.stderr)[0]).toMatch(/^agent-state cat: INVALID_KEY: /)
  })
})
