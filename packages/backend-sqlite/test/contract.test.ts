import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describeBackendContract } from '@agent-state/contract'
import Database from 'better-sqlite3'
import { afterAll, expect, it } from 'vitest'
import {
  createSqliteBackend,
  SQLITE_WRITE_STEPS,
  sqliteFrozenWriterLimitation,
} from '../src/index.js'

// One real database file shared by every instance of the suite; each check
// works in its own namespace, as the contract asks.
const dir = mkdtempSync(join(tmpdir(), 'agent-state-sqlite-contract-'))
const path = join(dir, 'contract.db')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Why the SQLite watch has no channel to interrupt. */
const POLLING =
  'polling: each tick compares a fresh listing with the last good one, so a failed probe or listing loses nothing'

describeBackendContract({
  name: 'sqlite',
  // 16 MiB (not the 64 MiB default) so the suite can also test VALUE_TOO_LARGE.
  create: (ctx) =>
    createSqliteBackend({
      path,
      namespace: ctx.namespace,
      clock: ctx.clock,
      maxValueBytes: 16 * 1024 * 1024,
    }),
  process: {
    module: join(import.meta.dirname, 'child-factory.ts'),
    options: { path },
    writeSteps: SQLITE_WRITE_STEPS,
  },
  // A holder frozen inside its write transaction keeps SQLite's database lock: no takeover is
  // possible until it wakes, so contenders must fail fast and say so (README, Caveats).
  // `agent-state verify` declares the same.
  frozenWriterLimitation: sqliteFrozenWriterLimitation(),
  watchInterrupt: { notApplicable: POLLING },
})

// Declared after the suite, so it runs after every tier, the kill -9 crash cycles included.
it('leaves the shared database file passing PRAGMA integrity_check', () => {
  const raw = new Database(path, { readonly: true })
  try {
    expect(raw.pragma('integrity_check', { simple: true })).toBe('ok')
  } finally {
    raw.close()
  }
})

// The test-only in-memory database: declared neither durable nor multi-process,
// so the suite must skip those tiers by name and pass the rest.
describeBackendContract({
  name: 'sqlite-memory',
  create: (ctx) =>
    createSqliteBackend({
      path: ':memory:',
      namespace: ctx.namespace,
      clock: ctx.clock,
      maxValueBytes: 16 * 1024 * 1024,
    }),
  // Only the change-notification tier's release check uses a child (its own in-memory database).
  process: { module: join(import.meta.dirname, 'child-factory.ts'), options: { path: ':memory:' } },
  watchInterrupt: { notApplicable: POLLING },
})
