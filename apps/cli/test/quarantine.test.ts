import { join } from 'node:path'
import { createFsBackend } from '@agent-state/fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { removeTemps, runCli, runScript, tempDir } from './cli-process.js'

afterAll(removeTemps)

describe('agent-state quarantine on state another process wrote', () => {
  let root: string
  let url: string
  beforeAll(async () => {
    root = join(tempDir('agent-state-quarantine-'), 'state')
    url = `file:${root}`
    const seeded = await runScript('./seed-state.ts', [url])
    expect(seeded.status, seeded.stderr).toBe(0)
  }, 120_000)

  it('moves a corrupt worker snapshot aside, keeps its exact bytes, and prints what it did', async () => {
    const before = await runCli(['cat', 'workers/w3/snapshot.json', '--url', url])
    expect(before.stdout).toBe('{"not":"a snapshot"}')
    const moved = await runCli([
      'quarantine',
      'worker',
      'w3',
      '--reason',
      'fails its schema',
      '--by',
      'ops-alice',
      '--url',
      url,
    ])
    expect(moved.status, moved.stderr).toBe(0)
    const id = /quarantine\/([0-9a-f-]{36})\/record/.exec(moved.stdout)?.[1] as string
    expect(moved.stdout.split('\n').slice(0, 6)).toEqual([
      expect.stringMatching(
        /^quarantined workers\/w3\/snapshot\.json \(version \S+, 20 bytes, sha256 [0-9a-f]{64}\)$/,
      ),
      expect.stringMatching(/^ {2}diagnosis: SNAPSHOT_CORRUPT: /),
      `  the damaged bytes, unchanged: quarantine/${id}/record`,
      `  the audit report:             quarantine/${id}/report.json`,
      expect.stringMatching(/^ {2}by ops-alice at \S+, reason: fails its schema$/),
      '  the original key is gone (deleted only after the copy was read back and compared)',
    ])
    const kept = await runCli(['cat', `quarantine/${id}/record`, '--url', url])
    expect(kept.stdout).toBe('{"not":"a snapshot"}')
    const gone = await runCli(['stat', 'workers/w3/snapshot.json', '--url', url])
    expect(gone.status).toBe(4)
    const workers = await runCli(['workers', '--json', '--url', url])
    expect(workers.status, workers.stderr).toBe(0)
    expect(JSON.parse(workers.stdout).workers.map((w: { workerId: string }) => w.workerId)).toEqual(
      ['w1', 'w2'],
    )
  })

  it('refuses what it must not move, each with its code, and leaves it in place', async () => {
    const healthy = await runCli(['quarantine', 'worker', 'w1', '--reason', 'x', '--url', url])
    expect(healthy.status).toBe(1)
    expect(healthy.stderr).toMatch(/^agent-state quarantine worker: SNAPSHOT_NOT_CORRUPT: /)
    expect((await runCli(['stat', 'workers/w1/snapshot.json', '--url', url])).status).toBe(0)
    const missing = await runCli(['quarantine', 'worker', 'nope', '--reason', 'x', '--url', url])
    expect(missing.status).toBe(4)
    expect(missing.stderr).toMatch(/SNAPSHOT_MISSING/)
    const leased = await runCli([
      'quarantine',
      'key',
      'plain/leased',
      '--reason',
      'x',
      '--url',
      url,
    ])
    expect(leased.status).toBe(1)
    expect(leased.stderr).toMatch(/^agent-state quarantine key: LEASE_HELD: /)
    expect((await runCli(['cat', 'plain/leased', '--url', url])).stdout).toBe('in use')
    const noReason = await runCli(['quarantine', 'key', 'plain/leased', '--url', url])
    expect(noReason.status).toBe(2)
    expect(noReason.stderr).toContain("required option '--reason <text>' not specified")
  })

  it('quarantines any record by key and lists every quarantine; an unreadable report is a row and exit 1', async () => {
    const moved = await runCli([
      'quarantine',
      'key',
      'bin/all-bytes',
      '--reason',
      'bad bytes',
      '--json',
      '--url',
      url,
    ])
    expect(moved.status, moved.stderr).toBe(0)
    const report = JSON.parse(moved.stdout)
    expect(report).toMatchObject({
      key: 'bin/all-bytes',
      size: 256,
      by: expect.any(String),
      reason: 'bad bytes',
      diagnosis: null,
    })
    const listed = await runCli(['quarantine', 'list', '--json', '--url', url])
    expect(listed.status, listed.stderr).toBe(0)
    const entries = JSON.parse(listed.stdout).quarantined
    expect(entries.map((e: { report: { key: string } }) => e.report.key)).toEqual([
      'workers/w3/snapshot.json',
      'bin/all-bytes',
    ])
    expect(entries[0].report).toMatchObject({
      by: 'ops-alice',
      diagnosis: { code: 'SNAPSHOT_CORRUPT' },
    })
    const lines = await runCli(['quarantine', 'list', '--jsonl', '--url', url])
    expect(
      lines.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(entries)
    // Damage one report: the list still shows both, says which is unreadable, and exits 1.
    const backend = createFsBackend({ root })
    await backend.put(report.reportKey, new TextEncoder().encode('not json'))
    await backend.close()
    const text = await runCli(['quarantine', 'list', '--url', url])
    expect(text.status).toBe(1)
    expect(text.stderr.trim()).toBe(
      'agent-state quarantine list: 1 report(s) could not be read (see the rows)',
    )
    expect(text.stdout).toMatch(/^QUARANTINE\s+AT\s+KEY\s+SIZE\s+BY\s+DIAGNOSIS$/m)
    expect(text.stdout).toMatch(
      /\s+workers\/w3\/snapshot\.json\s+20\s+ops-alice\s+SNAPSHOT_CORRUPT$/m,
    )
    expect(text.stdout).toContain(`${report.quarantineId}  -`)
    expect(text.stdout).toMatch(/UNREADABLE: /)
  })
})
