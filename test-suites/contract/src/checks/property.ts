import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import fc from 'fast-check'
import { bytes, ensureBytes, ensureEqual, ensureSame, fail } from '../assert.js'
import { type ContractCheck, check } from '../check.js'
import type { Harness } from '../harness.js'
import { byteCompare, listAll } from './list-all.js'

/** One step of the model-based test. */
type Command =
  | {
      readonly op: 'put'
      readonly key: number
      readonly value: number
      readonly cond: 'none' | 'match' | 'stale' | 'absent'
      readonly lease: number
    }
  | {
      readonly op: 'delete'
      readonly key: number
      readonly cond: 'none' | 'match' | 'stale'
      readonly lease: number
    }
  | { readonly op: 'get'; readonly key: number }
  | { readonly op: 'list'; readonly prefix: number; readonly limit: number }
  | { readonly op: 'acquire'; readonly key: number }
  | { readonly op: 'release'; readonly key: number; readonly lease: number }
  | { readonly op: 'advance'; readonly ms: number }

const KEYS = ['a', 'a/b', 'ab', 'é', '😀', '\uFF5A']
/**
 * Lease TTL in the model: `advance` steps move a host clock past it now and
 * then; on real-time lease clocks it is long enough never to run out mid-test.
 */
const HOST_TTL_MS = 20_000
const REAL_TTL_MS = 60 * 60 * 1000
const PREFIXES = ['', 'a', 'a/', 'b', 'x']
/** Two holder names, so the same holder often takes a key again: fencing must go by token. */
const HOLDERS = ['p', 'q']

const commandArb: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    op: fc.constant('put' as const),
    key: fc.nat(KEYS.length - 1),
    value: fc.nat(5),
    cond: fc.constantFrom('none' as const, 'match' as const, 'stale' as const, 'absent' as const),
    lease: fc.integer({ min: -1, max: 2 }),
  }),
  fc.record({
    op: fc.constant('delete' as const),
    key: fc.nat(KEYS.length - 1),
    cond: fc.constantFrom('none' as const, 'match' as const, 'stale' as const),
    lease: fc.integer({ min: -1, max: 2 }),
  }),
  fc.record({ op: fc.constant('get' as const), key: fc.nat(KEYS.length - 1) }),
  fc.record({
    op: fc.constant('list' as const),
    prefix: fc.nat(PREFIXES.length - 1),
    limit: fc.integer({ min: 1, max: 4 }),
  }),
  {
    arbitrary: fc.record({ op: fc.constant('acquire' as const), key: fc.nat(KEYS.length - 1) }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      op: fc.constant('release' as const),
      key: fc.nat(KEYS.length - 1),
      lease: fc.nat(2),
    }),
    weight: 2,
  },
  fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 45_000 }) }),
)

/** The in-test model: deliberately written from DESIGN §2, not from any backend's code. */
interface ModelKey {
  value: number | null
  version: string | null
  versions: string[]
  leases: Lease[]
  current: { token: number; expiresAt: number } | null
  fence: number
}

function leaseCode(entry: ModelKey, given: Lease | undefined, now: number): string | undefined {
  const live = entry.current !== null && entry.current.expiresAt > now
  if (given === undefined) return live ? 'LEASE_HELD' : undefined
  return live && entry.current?.token === given.token ? undefined : 'LEASE_LOST'
}

async function outcome<T>(run: () => Promise<T>): Promise<{ ok: T } | { code: string }> {
  try {
    return { ok: await run() }
  } catch (error) {
    if (isAgentStateError(error)) return { code: error.code }
    throw error
  }
}

async function runCommands(
  h: Harness,
  b: Backend,
  run: number,
  commands: readonly Command[],
): Promise<void> {
  const root = `prop${run}/`
  const model = new Map<string, ModelKey>()
  const entry = (key: string): ModelKey => {
    let found = model.get(key)
    if (found === undefined) {
      found = { value: null, version: null, versions: [], leases: [], current: null, fence: 0 }
      model.set(key, found)
    }
    return found
  }
  const host = h.capabilities.leaseClock === 'host'
  const ttlMs = host ? HOST_TTL_MS : REAL_TTL_MS
  for (const [step, c] of commands.entries()) {
    const where = `run ${run} step ${step} ${JSON.stringify(c)}`
    const now = h.clock.now()
    if (c.op === 'advance') {
      if (host) h.clock.advance(c.ms)
      continue
    }
    if (c.op === 'list') {
      const prefix = root + (PREFIXES[c.prefix] as string)
      const expected = [...model.entries()]
        .filter(([k, e]) => e.value !== null && k.startsWith(prefix))
        .map(([k]) => k)
        .sort(byteCompare)
      ensureSame(await listAll(b, { prefix, limit: c.limit }), expected, `${where}: listing`)
      continue
    }
    const key = root + (KEYS[c.key] as string)
    const e = entry(key)
    if (c.op === 'get') {
      const got = await b.get(key)
      if (e.value === null) ensureEqual(got, null, `${where}: get of an absent key`)
      else {
        ensureBytes(got?.value, bytes(`v${e.value}`), `${where}: value`)
        ensureEqual(got?.meta.version, e.version, `${where}: version`)
      }
      continue
    }
    if (c.op === 'acquire') {
      const live = e.current !== null && e.current.expiresAt > now
      const result = await outcome(() =>
        b.acquireLease(key, { holder: HOLDERS[step % 2] as string, ttlMs }),
      )
      if (live) ensureSame(result, { code: 'LEASE_HELD' }, `${where}: acquire while leased`)
      else {
        if (!('ok' in result)) fail(`${where}: acquire failed with ${result.code}`)
        if (result.ok.token <= e.fence)
          fail(`${where}: token ${result.ok.token} not above ${e.fence}`)
        e.fence = result.ok.token
        e.current = { token: result.ok.token, expiresAt: now + ttlMs }
        e.leases.unshift(result.ok)
      }
      continue
    }
    if (c.op === 'release') {
      const lease = e.leases[c.lease]
      if (lease === undefined) continue
      const isCurrent = e.current?.token === lease.token
      ensureEqual(await b.releaseLease(lease), isCurrent, `${where}: release result`)
      if (isCurrent) e.current = null
      continue
    }
    const lease = c.lease < 0 ? undefined : e.leases[c.lease]
    const stale = e.versions.find((v) => v !== e.version)
    const cond = c.cond === 'match' ? (e.version ?? stale) : c.cond === 'stale' ? stale : undefined
    if ((c.cond === 'match' || c.cond === 'stale') && cond === undefined) continue
    const pre = c.cond === 'absent' ? e.value === null : cond === undefined || cond === e.version
    const expectedCode = leaseCode(e, lease, now) ?? (pre ? undefined : 'PRECONDITION_FAILED')
    if (c.op === 'put') {
      const options = {
        ...(cond === undefined ? {} : { ifMatch: cond }),
        ...(c.cond === 'absent' ? { ifNoneMatch: '*' as const } : {}),
        ...(lease === undefined ? {} : { lease }),
      }
      const result = await outcome(() => b.put(key, bytes(`v${c.value}`), options))
      if (expectedCode !== undefined)
        ensureSame(result, { code: expectedCode }, `${where}: failing put`)
      else {
        if (!('ok' in result)) fail(`${where}: put failed with ${result.code}`)
        if (e.versions.includes(result.ok.version))
          fail(`${where}: version ${result.ok.version} reused`)
        e.value = c.value
        e.version = result.ok.version
        e.versions.push(result.ok.version)
      }
    } else {
      const options = {
        ...(cond === undefined ? {} : { ifMatch: cond }),
        ...(lease === undefined ? {} : { lease }),
      }
      const result = await outcome(() => b.delete(key, options))
      if (expectedCode !== undefined)
        ensureSame(result, { code: expectedCode }, `${where}: failing delete`)
      else {
        ensureSame(result, { ok: e.value !== null }, `${where}: delete result`)
        e.value = null
        e.version = null
      }
    }
  }
}

/** Model-based property test. */
export const propertyChecks: ContractCheck[] = [
  check(
    'property',
    'model-based random command sequences match the model',
    async (h) => {
      const b = await h.backend()
      let run = 0
      await fc.assert(
        fc.asyncProperty(
          fc.array(commandArb, { minLength: 1, maxLength: 60, size: 'max' }),
          async (commands) => {
            run++
            await runCommands(h, b, run, commands)
          },
        ),
        { seed: h.seed, numRuns: 40, endOnFailure: true },
      )
    },
    { timeoutMs: 120_000 },
  ),
]
