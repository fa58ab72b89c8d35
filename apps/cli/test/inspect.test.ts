import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listKeys } from '../src/commands/keys.js'
import { BIN, removeTemps, runCli, runScript, tempDir } from './cli-process.js'

afterAll(removeTemps)

describe('inspect: ls, stat, cat, sessions, workers on state another process wrote', () => {
  let url: string
  beforeAll(async () => {
    url = `file:${join(tempDir('agent-state-inspect-'), 'state')}`
    const seeded = await runScript('./seed-state.ts', [url])
    expect(seeded.status, seeded.stderr).toBe(0)
  }, 120_000)

  it('ls groups at "/" and lists every key with -r, as JSON and JSON lines', async () => {
    const top = await runCli(['ls', '--json', '--url', url])
    expect(top.status, top.stderr).toBe(0)
    expect(JSON.parse(top.stdout)).toEqual({
      prefix: '',
      keys: [],
      prefixes: ['bin/', 'plain/', 'sessions/', 'workers/'],
    })
    const all = await runCli(['ls', '-r', '--jsonl', '--url', url])
    const rows = all.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(rows.map((r) => r.key)).toEqual([
      'bin/all-bytes',
      'plain/a b ✓',
      'plain/leased',
      'sessions/empty-1/session.json',
      'sessions/review-42/data/plan.md',
      'sessions/review-42/handoff.json',
      'sessions/review-42/session.json',
      'workers/w1/snapshot.json',
      'workers/w2/snapshot.json',
      'workers/w3/snapshot.json',
    ])
    for (const row of rows) expect(row).toMatchObject({ type: 'key', version: expect.any(String) })
    const text = await runCli(['ls', 'sessions/', '--url', url])
    const lines = text.stdout.split('\n').filter((l) => l !== '')
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(/^PRE\s+sessions\/empty-1\/$/)
    expect(lines[1]).toMatch(/^PRE\s+sessions\/review-42\/$/)
  })

  it('ls -l adds the writer identity; --limit stops early', async () => {
    const long = await runCli(['ls', 'plain/', '-r', '-l', '--json', '--url', url])
    const keys = JSON.parse(long.stdout).keys
    expect(keys[0]).toMatchObject({
      key: 'plain/a b ✓',
      size: 5,
      writer: { writerId: 'me', stageId: 's1' },
    })
    const limited = await runCli(['ls', '-r', '--limit', '3', '--jsonl', '--url', url])
    expect(limited.stdout.trim().split('\n')).toHaveLength(3)
  })

  it('stat shows the value meta and the live lease', async () => {
    const result = await runCli(['stat', 'plain/leased', '--json', '--url', url])
    expect(result.status).toBe(0)
    const stat = JSON.parse(result.stdout)
    expect(stat.value).toMatchObject({ key: 'plain/leased', size: 6, writer: { writerId: 'me' } })
    expect(stat.lease).toMatchObject({ holder: 'someone', token: 1 })
    expect(stat.lease.expiresAt).toBeGreaterThan(Date.now())
    const text = await runCli(['stat', 'plain/leased', '--url', url])
    expect(text.stdout).toMatch(/^lease\s+held by someone$/m)
    expect(text.stdout).toMatch(/^token\s+1$/m)
  })

  it('cat writes the exact bytes', () => {
    const result = spawnSync(process.execPath, [BIN, 'cat', 'bin/all-bytes', '--url', url])
    expect(result.status).toBe(0)
    expect([...result.stdout]).toEqual(Array.from({ length: 256 }, (_, i) => i))
  })

  it('sessions shows each session with its handoff status', async () => {
    const result = await runCli(['sessions', '--json', '--url', url])
    expect(result.status, result.stderr).toBe(0)
    const { sessions } = JSON.parse(result.stdout)
    expect(sessions).toHaveLength(2)
    expect(sessions[0]).toMatchObject({ sessionId: 'empty-1', handoff: { state: 'none' } })
    expect(sessions[1]).toMatchObject({
      sessionId: 'review-42',
      handoff: { state: 'present', status: 'needs_review', writer: 'triage' },
    })
    const text = await runCli(['sessions', '--url', url])
    expect(text.stdout).toMatch(/^review-42\s+\S+\s+\S+\s+needs_review\s+triage$/m)
  })

  it('workers shows state and owner; a corrupt snapshot is a row with its code and exit 1', async () => {
    const result = await runCli(['workers', '--jsonl', '--url', url])
    expect(result.status).toBe(1)
    expect(result.stderr.trim()).toBe(
      'agent-state workers: 1 record(s) could not be read (see the rows)',
    )
    const rows = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(rows.map((r) => [r.workerId, r.status])).toEqual([
      ['w1', 'running'],
      ['w2', 'suspended'],
      ['w3', null],
    ])
    expect(rows[0].lease).toMatchObject({ holder: 'host-a:1', token: 1 })
    expect(rows[0].iterationsCompleted).toBe(1)
    expect(rows[1].lease).toBeNull()
    expect(rows[2].error.code).toBe('SNAPSHOT_CORRUPT')
    const text = await runCli(['workers', '--url', url])
    // The last column, NEXT WAKE, is `-` for a worker that is not parked.
    expect(text.stdout).toMatch(/^w1\s+running\s+1\s+\S+\s+host-a:1\s+1\s+in \d+m \d+s\s+-$/m)
    expect(text.stdout).toMatch(/^w3\s+SNAPSHOT_CORRUPT\s/m)
  })
})

describe('listing reads no values', () => {
  it('ls calls only list; -l adds one head per key; neither calls get', async () => {
    const backend = createFsBackend({ root: join(tempDir('agent-state-count-'), 'state') })
    for (let i = 0; i < 30; i++) await backend.put(`d${i % 3}/k${i}`, new Uint8Array(100))
    const calls: Record<string, number> = {}
    const counted = new Proxy(backend, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver)
        if (typeof value !== 'function') return value
        return (...args: unknown[]) => {
          calls[String(name)] = (calls[String(name)] ?? 0) + 1
          return value.apply(target, args)
        }
      },
    }) as Backend
    const drain = async (options: Parameters<typeof listKeys>[1]) => {
      let n = 0
      for await (const _ of listKeys(counted, options)) n++
      return n
    }
    expect(await drain({ recursive: true })).toBe(30)
    expect(await drain({})).toBe(3)
    expect(calls).toEqual({ list: 2 })
    expect(await drain({ recursive: true, long: true })).toBe(30)
    expect(calls).toEqual({ list: 3, head: 30 })
    await backend.close()
  })
})
