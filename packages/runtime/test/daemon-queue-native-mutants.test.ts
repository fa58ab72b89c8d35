/**
 * The native queue path's checks run against deliberately broken Redis
 * scripts (the backend's own `withScriptMutant`: the script's source is
 * replaced while backends created inside load it) and deliberately broken
 * SQLite and PostgreSQL backends (their `queue-steps.ts` replaced, the
 * backend imported afresh).
 * Each mutant must make the scenario of daemon-queue.test.ts see the failure
 * it exists to catch.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshName, postgresConfig } from '@agent-state/backend-targets'
import type { Backend, KeyState } from '@agent-state/core'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { z } from 'zod'
import { QUEUE_APPEND, QUEUE_CLAIM } from '../../backend-redis/src/queue-scripts.js'
import { withScriptMutant } from '../../backend-redis/test/script-mutant.js'
import type * as SqliteQueueSteps from '../../backend-sqlite/src/queue-steps.js'
import { BACKENDS, type BackendFactory, type BackendFixture } from './backends.js'
import {
  anyFieldOrder,
  capacityExact,
  damagedRecordsRefused,
  gainedCapability,
  tokenPerClaim,
  withoutNativeQueue,
} from './daemon-queue-scenarios.js'
import { mutated, unmockAll } from './mutants.js'
import { createOnPath } from './queue-paths.js'

const redis = BACKENDS.find((factory) => factory.name === 'redis') as BackendFactory
const createNative = createOnPath('native')

let fixture: BackendFixture
beforeEach(() => {
  fixture = redis.setup()
})
afterEach(async () => {
  await fixture.cleanup()
})

describe('native queue script mutants on redis', () => {
  it('an append that skips the capacity check stores past the capacity, which the check sees', async () => {
    const outcome = await withScriptMutant(
      {
        script: QUEUE_APPEND,
        from: 'local stored = math.min(tonumber(ARGV[2]) - (nxt - at), k)',
        to: 'local stored = k',
      },
      () => capacityExact(createNative, fixture),
    )
    // The check expects QUEUE_FULL twice and 2 queued.
    expect(outcome).toEqual({ single: 'resolved', batch: 'resolved', queued: 4 })
  })

  it('a claim that does not bump the fencing token hands one token out twice, which the check sees', async () => {
    const outcome = await withScriptMutant(
      {
        script: QUEUE_CLAIM,
        from: 'local token = math.max((tonumber(f[4]) or 0) + 1, now_us)',
        to: 'local token = tonumber(f[4]) or now_us',
      },
      () => tokenPerClaim(createNative, fixture),
    )
    // The check expects the second token to be larger.
    expect(outcome.second).toBe(outcome.first)
    expect(outcome.attempts).toEqual([1, 2])
  })
  it('an append that trusts a record by its start alone takes a cut tail, which the check sees', async () => {
    const outcome = await withScriptMutant(
      {
        script: QUEUE_APPEND,
        from: 'if n and string.byte(raw, -1) == 125 then return tonumber(n) end',
        to: 'if n then return tonumber(n) end',
      },
      () => damagedRecordsRefused(createNative, fixture),
    )
    // The check expects QUEUE_CORRUPT and the cut tail left as it was.
    expect(outcome).toMatchObject({ trigger: 'resolved', claim: 'resolved', tailUnchanged: false })
  })

  it('an append that only reads the usual field order refuses a reordered head, which the check sees', async () => {
    const outcome = await withScriptMutant(
      {
        script: QUEUE_APPEND,
        from: '  local t = decoded(raw)\n  if not t then return nil end',
        to: '  if true then return nil end',
      },
      () => anyFieldOrder(createNative, fixture),
    )
    // The check expects the third event stored and 0, 1, 2 delivered.
    expect(outcome).toMatchObject({ stored: 'QUEUE_CORRUPT', full: 'QUEUE_CORRUPT' })
  })

  it('a claim that only reads the usual field order refuses a reordered event, which the check sees', async () => {
    const outcome = await withScriptMutant(
      { script: QUEUE_CLAIM, from: '  local e = decoded(raw)', to: '  local e = nil' },
      () => anyFieldOrder(createNative, fixture),
    )
    // The check expects event 0 delivered and the queue drained.
    expect(outcome).toMatchObject({ seen: [], drained: 'QUEUE_CORRUPT' })
  })

  it("a claim that does not check the event's sequence number delivers a misplaced record, which the check sees", async () => {
    const outcome = await withScriptMutant(
      { script: QUEUE_CLAIM, from: `"seq":' .. num(seq) .. ',"eventId":'`, to: `"seq":'` },
      () => damagedRecordsRefused(createNative, fixture),
    )
    // The check expects QUEUE_CORRUPT for the event of sequence 1 at sequence 0's key.
    expect(outcome.misplaced).toBe('resolved')
  })
})

/** A backend whose queue decisions (`queue-steps.ts`) the mutants below replace. */
interface Mutable {
  readonly name: string
  /** Its `queue-steps.ts`, as this file imports it. */
  readonly steps: string
  /** Creates an instance from the backend's package imported afresh (after `vi.doMock`). */
  readonly open: (dir: string) => Promise<() => Backend>
}

const MUTABLE: readonly Mutable[] = [
  {
    name: 'sqlite',
    steps: '../../backend-sqlite/src/queue-steps.js',
    open: async (dir) => {
      const { createSqliteBackend } = await import('../../backend-sqlite/src/index.js')
      const path = join(dir, 'state.db')
      return () => createSqliteBackend({ path, namespace: 'mutant' })
    },
  },
  {
    name: 'postgres',
    steps: '../../backend-postgres/src/queue-steps.js',
    open: async () => {
      const { createPostgresBackend } = await import('../../backend-postgres/src/index.js')
      const connectionString = postgresConfig().url
      const namespace = freshName('mutant')
      return () => createPostgresBackend({ connectionString, namespace, poolSize: 2 })
    },
  },
]

/** The queue decisions of the backends above (the same functions on both), replaced by `mutate`. */
type Steps = typeof SqliteQueueSteps

describe.each(MUTABLE)('native queue mutants on $name', (mutable) => {
  let dir: string
  const opened: Backend[] = []
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), `agent-state-runtime-${mutable.name}-mutant-`))
  })
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((backend) => backend.close()))
    vi.doUnmock(mutable.steps)
    vi.resetModules()
    rmSync(dir, { recursive: true, force: true })
  })

  /** A fixture whose backends come from the backend imported with its `queue-steps.ts` mutated. */
  async function mutantFixture(
    mutate: (original: Steps) => Partial<Steps>,
  ): Promise<BackendFixture> {
    vi.resetModules()
    vi.doMock(mutable.steps, async (importOriginal) => {
      const original = await importOriginal<Steps>()
      return { ...original, ...mutate(original) }
    })
    const create = await mutable.open(dir)
    return {
      create: () => {
        const backend = create()
        opened.push(backend)
        return backend
      },
    } as unknown as BackendFixture
  }

  it('an append that skips the capacity check stores past the capacity, which the check sees', async () => {
    const fixture = await mutantFixture(() => ({
      appendRoom: (_capacity, _next, _head, count) => count,
    }))
    // The check expects QUEUE_FULL twice and 2 queued.
    expect(await capacityExact(createNative, fixture)).toEqual({
      single: 'resolved',
      batch: 'resolved',
      queued: 4,
    })
  })

  it('a claim that does not bump the fencing token hands one token out twice, which the check sees', async () => {
    const fixture = await mutantFixture((original) => ({
      grantDelivery: (key, state: KeyState, holder, ttlMs, now) => {
        // The counter not moved: the token is the last one handed out (1 for the first claim).
        const fenced = { ...state, fence: Math.max(state.fence - 1, 0) }
        return original.grantDelivery(key, fenced, holder, ttlMs, now)
      },
    }))
    const outcome = await tokenPerClaim(createNative, fixture)
    // The check expects the second token to be larger.
    expect(outcome.second).toBe(outcome.first)
    expect(outcome.attempts).toEqual([1, 2])
  })
})

describe('queue path mutants', () => {
  afterEach(unmockAll)

  it('a runtime that moves a generic queue to the native path once the backend has it loses the tail events, which the check sees', async () => {
    const rt = await mutated('../src/daemon/queue-records.ts', (original) => ({
      ...original,
      // Every stored configuration read as native: the path chosen at open, not at creation.
      queueConfigSchema: (original.queueConfigSchema as z.ZodType<object>).transform((config) => ({
        ...config,
        path: 'native',
      })),
    }))
    const sqlite = BACKENDS.find((factory) => factory.name === 'sqlite') as BackendFactory
    const fixture = sqlite.setup()
    try {
      const outcome = await gainedCapability(
        rt,
        withoutNativeQueue(fixture.create()),
        fixture.create(),
      )
      // The check expects both generic and events 0, 1, 2 delivered; the native claim finds
      // no record of event 0 (it lives in the tail record only).
      expect(outcome.paths).toEqual(['generic', 'native'])
      expect(outcome.drained).toBe('QUEUE_CORRUPT')
      expect(outcome.seen).toEqual([])
    } finally {
      await fixture.cleanup()
    }
  })
})
