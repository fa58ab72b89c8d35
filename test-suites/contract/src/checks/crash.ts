import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import { ensure, ensureEqual, fail } from '../assert.js'
import { type ContractCheck, check, notClaimed } from '../check.js'
import type { ContractChild } from '../child-process.js'
import type { ChildMessage, CrashOp } from '../child-protocol.js'
import { readCheckedValue } from '../child-values.js'
import { listAll } from './list-all.js'
import { multiProcessSkip } from './multi-process.js'

const PREFIX = 'crash/'
const LEASE_KEY = 'crash-lease'
const LEASE_TTL_MS = 250

/**
 * Fewest kill -9 cycles a crash tier may be configured with: below it the
 * tier fails, since a handful of kills proves little (the ack-before-durable
 * store of the mutant tests can survive a few).
 */
export const MIN_CRASH_CYCLES = 10

/** How long a cycle's writer may take to acknowledge its first write before the cycle fails. */
const FIRST_ACK_TIMEOUT_MS = 60_000

/** Resolves once `log` holds an acknowledgement; rejects on `failed()` or after the timeout. */
async function firstAck(
  log: CycleLog,
  child: ContractChild,
  failed: () => string | undefined,
  cycle: number,
): Promise<void> {
  const deadline = Date.now() + FIRST_ACK_TIMEOUT_MS
  let exited = false
  void child.exited.then(() => {
    exited = true
  })
  while (log.acked.size === 0) {
    const error = failed()
    if (error !== undefined)
      fail(`cycle ${cycle}: the writer failed before its first write: ${error}`)
    if (exited) fail(`cycle ${cycle}: the writer exited before acknowledging any write`)
    if (Date.now() > deadline) {
      fail(`cycle ${cycle}: no write acknowledged within ${FIRST_ACK_TIMEOUT_MS} ms`)
    }
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** What the parent knows of a key: the counter of its value, or null (absent). */
type KeyCounter = number | null

interface CycleLog {
  intents: Array<{ seq: number; op: CrashOp }>
  /** Acknowledged writes: seq to whether the write took effect (a lost CAS did not). */
  acked: Map<number, boolean>
  leaseToken: number | undefined
}

function watch(child: ContractChild): CycleLog {
  const log: CycleLog = { intents: [], acked: new Map(), leaseToken: undefined }
  child.onMessage((message: ChildMessage) => {
    if (message.type === 'intent') log.intents.push({ seq: message.seq, op: message.op })
    else if (message.type === 'ack')
      log.acked.set(message.seq, message.version !== undefined || message.op === 'delete')
    else if (message.type === 'crash-lease') log.leaseToken = message.token
  })
  return log
}

function effect(op: CrashOp): KeyCounter {
  return op.kind === 'delete' ? null : (op.counter as number)
}

/**
 * The states each key may be in after the kill. The writer runs one write at
 * a time and announces each before starting it, so every announced write but
 * the last has completed (and been acknowledged); only the last may or may
 * not have landed.
 */
function expectedStates(known: Map<string, KeyCounter>, log: CycleLog): Map<string, KeyCounter[]> {
  const state = new Map(known)
  const intents = log.intents
  const last = intents[intents.length - 1]
  for (const { seq, op } of intents) {
    if (seq === last?.seq && !log.acked.has(seq)) continue
    const tookEffect = log.acked.get(seq)
    if (tookEffect === undefined) fail(`write ${seq} completed without an acknowledgement`)
    if (tookEffect) state.set(op.key, effect(op))
  }
  const allowed = new Map<string, KeyCounter[]>()
  for (const [key, value] of state) allowed.set(key, [value])
  if (last !== undefined && !log.acked.has(last.seq)) {
    const before = state.get(last.op.key) ?? null
    allowed.set(last.op.key, [before, effect(last.op)])
  }
  return allowed
}

/** How long the in-flight write's key must look unchanged before it counts as settled. */
const SETTLE_STABLE_MS = 500
/** Longest wait for the in-flight write to settle. */
const SETTLE_MAX_MS = 3000

/** The counter a key holds, `null` when absent, `undefined` when its value is torn. */
async function counterOf(b: Backend, key: string): Promise<KeyCounter | undefined> {
  const got = await b.get(key)
  if (got === null) return null
  const checked = readCheckedValue(got.value)
  return typeof checked === 'string' || checked.key !== key ? undefined : checked.counter
}

/**
 * Waits until the killed writer's in-flight write has settled. Against a
 * network server a request the child sent just before SIGKILL may still be
 * executed after the child is gone; verifying before it lands would record
 * the "before" state and blame the late write on the next cycle. Once the
 * write's own effect is visible nothing else can change the key; otherwise
 * the key must look the same for {@link SETTLE_STABLE_MS}. Local stores settle
 * at once when the write landed, and in half a second when it did not.
 */
async function settleInFlight(b: Backend, log: CycleLog): Promise<void> {
  const last = log.intents[log.intents.length - 1]
  if (last === undefined || log.acked.has(last.seq)) return
  const after = effect(last.op)
  const deadline = Date.now() + SETTLE_MAX_MS
  let seen = await counterOf(b, last.op.key)
  let since = Date.now()
  while (seen !== after && Date.now() - since < SETTLE_STABLE_MS && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    const now = await counterOf(b, last.op.key)
    if (now !== seen) {
      seen = now
      since = Date.now()
    }
  }
}

async function verify(
  fresh: Backend,
  known: Map<string, KeyCounter>,
  log: CycleLog,
  cycle: number,
): Promise<void> {
  await settleInFlight(fresh, log)
  const allowed = expectedStates(known, log)
  for (const [key, states] of allowed) {
    const got = await fresh.get(key)
    let state: KeyCounter = null
    if (got !== null) {
      const checked = readCheckedValue(got.value)
      if (typeof checked === 'string') fail(`cycle ${cycle}: ${key}: ${checked}`)
      if (checked.key !== key) fail(`cycle ${cycle}: ${key} holds the value of ${checked.key}`)
      state = checked.counter
    }
    if (!states.includes(state)) {
      fail(
        `cycle ${cycle}: ${key} is ${state === null ? 'absent' : `at counter ${state}`}, expected one of ${JSON.stringify(states)}: an acknowledged write was lost or undone`,
      )
    }
    known.set(key, state)
  }
  const listed = await listAll(fresh, { prefix: PREFIX })
  const present = [...known.entries()]
    .filter(([, v]) => v !== null)
    .map(([k]) => k)
    .sort()
  if (JSON.stringify([...listed].sort()) !== JSON.stringify(present)) {
    const last = log.intents[log.intents.length - 1]
    const inFlight =
      last === undefined || log.acked.has(last.seq) ? 'none' : JSON.stringify(last.op)
    fail(
      `cycle ${cycle}: listing ${JSON.stringify(listed)} disagrees with get ${JSON.stringify(present)} (in-flight write: ${inFlight})`,
    )
  }
  if (log.leaseToken !== undefined) {
    const lease = await acquirePolling(fresh, LEASE_KEY, LEASE_TTL_MS * 4 + 3000)
    ensure(
      lease.token > log.leaseToken,
      `cycle ${cycle}: token ${lease.token} after the killed holder's ${log.leaseToken}`,
    )
    await fresh.releaseLease(lease)
  }
}

/** Acquires on real time, retrying on LEASE_HELD until `waitMs` passed. */
async function acquirePolling(b: Backend, key: string, waitMs: number): Promise<Lease> {
  const deadline = Date.now() + waitMs
  for (;;) {
    try {
      return await b.acquireLease(key, { holder: 'verifier', ttlMs: 1000 })
    } catch (error) {
      if (!isAgentStateError(error, 'LEASE_HELD') || Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
}

/** Kill -9 crash cycles. */
export const crashChecks: ContractCheck[] = [
  check(
    'crash',
    'acknowledged writes survive kill -9 and nothing is torn',
    async (h) => {
      const configured = h.scale.crashCycles
      h.report({ cyclesConfigured: configured, cyclesVerified: 0, acknowledgedWrites: 0 })
      if (configured < MIN_CRASH_CYCLES) {
        fail(
          `the crash tier is configured with ${configured} kill -9 cycles, below the floor of ${MIN_CRASH_CYCLES}: it would prove nothing`,
        )
      }
      const known = new Map<string, KeyCounter>()
      let counter = 0
      let acknowledged = 0
      let verified = 0
      let next = h.child()
      for (let cycle = 0; cycle < configured; cycle++) {
        const child = await next
        const log = watch(child)
        let killed = false
        let writerError: string | undefined
        child
          .request({
            type: 'crash-writer',
            prefix: PREFIX,
            start: counter,
            leaseKey: LEASE_KEY,
            leaseTtlMs: LEASE_TTL_MS,
          })
          .catch((error: unknown) => {
            if (!killed) writerError = String(error)
          })
        // Warm the next child while this one writes; it idles until told to start.
        next = h.child()
        // Kill at a random point after the first acknowledged write, so every cycle has
        // something to verify however slowly the child started on a loaded machine.
        await firstAck(log, child, () => writerError, cycle)
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 250))
        killed = true
        child.signal('SIGKILL')
        await child.exited
        if (writerError !== undefined)
          fail(`cycle ${cycle}: the writer failed before the kill: ${writerError}`)
        const ackedThisCycle = log.acked.size
        if (ackedThisCycle === 0) fail(`cycle ${cycle}: killed before any acknowledged write`)
        acknowledged += ackedThisCycle
        counter += 1_000_000
        const fresh = await h.backend({ realClock: true })
        try {
          await verify(fresh, known, log, cycle)
        } catch (error) {
          if (isAgentStateError(error))
            fail(`cycle ${cycle}: reopening after kill -9 failed: ${error.code} ${error.message}`)
          throw error
        } finally {
          await fresh.close()
        }
        verified++
        h.report({ cyclesVerified: verified, acknowledgedWrites: acknowledged })
      }
      const last = await next
      await last.stop()
      ensureEqual(verified, configured, 'kill -9 cycles verified')
      ensure(acknowledged >= verified, 'every cycle verified at least one acknowledged write')
    },
    {
      timeoutMs: 300_000,
      skip: (caps) => multiProcessSkip(caps) ?? (caps.durable ? undefined : notClaimed('durable')),
    },
  ),
]
