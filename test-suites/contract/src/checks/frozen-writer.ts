import { readFileSync } from 'node:fs'
import { type Backend, isAgentStateError, type Lease, type ValueMeta } from '@agent-state/core'
import { bytes, ensure, ensureEqual, ensureSame, fail, text } from '../assert.js'
import { type ContractCheck, check } from '../check.js'
import type { FrozenWoke } from '../child-protocol.js'
import { type Harness, sleep } from '../harness.js'
import type { FrozenWriterLimitation } from '../types.js'
import { multiProcessSkip } from './multi-process.js'

/** The fewest rounds the frozen-writer tier accepts: fewer would prove nothing. */
export const MIN_FROZEN_ROUNDS = 10

/** The holder's lease TTL: long enough for a put and a renew on a loaded machine. */
const TTL_MS = 1000
/** The contract's bound on how late a takeover may be past the frozen holder's TTL. */
const MARGIN_MS = 1000
/** Extra time a declared limitation's contender may take past the backend's busy timeout. */
const FAST_MS = 1000

/** Whether `pid` is stopped (state T in /proc), so timing starts at the real stop. */
async function waitStopped(pid: number, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs
  for (;;) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const at = stat.lastIndexOf(')') + 2
    const state = stat.slice(at, at + 1)
    if (state === 'T' || state === 't') return
    if (Date.now() > deadline) fail(`the holder (pid ${pid}) did not stop within ${withinMs} ms`)
    await sleep(1)
  }
}

/** Resolves the token of the holder's next `frozen-held` message. */
function nextHeld(waiters: Array<(token: number) => void>): Promise<number> {
  return new Promise((resolve) => waiters.push(resolve))
}

type Attempt = { lease: Lease; takenAt: number } | { limited: { ms: number; message: string } }

/**
 * The contender's takeover: retries on `LEASE_HELD` until TTL + margin (and
 * a little more, so a late takeover is measured rather than guessed). A
 * failure with the declared limitation's code ends it, if it came fast and
 * says what the declaration says; anything else fails the check.
 */
async function takeOver(
  contender: Backend,
  key: string,
  stoppedAt: number,
  label: string,
  limitation: FrozenWriterLimitation | undefined,
): Promise<Attempt> {
  for (;;) {
    const started = Date.now()
    try {
      const lease = await contender.acquireLease(key, { holder: 'contender', ttlMs: 60_000 })
      return { lease, takenAt: Date.now() }
    } catch (error) {
      const ms = Date.now() - started
      if (isAgentStateError(error, 'LEASE_HELD')) {
        if (Date.now() - stoppedAt > TTL_MS + MARGIN_MS + 5000) {
          fail(`${label}: the frozen holder's expired lease still blocks the takeover`)
        }
        await sleep(5)
        continue
      }
      const code = isAgentStateError(error) ? error.code : 'a raw error'
      const message = error instanceof Error ? error.message : String(error)
      if (limitation === undefined || code !== limitation.code) {
        fail(`${label}: the contender's takeover failed with ${code}: ${message}`)
      }
      ensure(
        limitation.message.test(message),
        `${label}: the declared limitation's message ${String(limitation.message)} (got ${JSON.stringify(message)})`,
      )
      ensure(
        ms <= limitation.busyTimeoutMs + FAST_MS,
        `${label}: the declared limitation fails fast (${ms} ms, allowed ${limitation.busyTimeoutMs + FAST_MS})`,
      )
      return { limited: { ms, message } }
    }
  }
}

/** The checks of a woken holder whose lease was taken over while it slept. */
function ensureRefused(woke: FrozenWoke, label: string, release: string): void {
  ensure(woke.writes > 0, `${label}: the holder was writing when it froze`)
  // The first operation that failed after the wake, and everything after it.
  ensureEqual(woke.failed, 'LEASE_LOST', `${label}: the woken holder's first failed operation`)
  ensureEqual(woke.renew, 'LEASE_LOST', `${label}: renew by the woken holder`)
  ensureEqual(woke.put, 'LEASE_LOST', `${label}: fenced put by the woken holder`)
  ensureEqual(woke.release, release, `${label}: release by the woken holder`)
}

/** Whether the contender's write and lease survived the woken holder. */
async function ensureContenderIntact(
  contender: Backend,
  key: string,
  lease: Lease,
  mine: ValueMeta,
  label: string,
): Promise<void> {
  const after = await contender.get(key)
  ensureSame(after?.meta.version, mine.version, `${label}: the contender's version is intact`)
  ensureEqual(after === null ? null : text(after.value), 'contender', `${label}: its value`)
  ensureSame((await contender.getLease(key))?.token, lease.token, `${label}: its lease is intact`)
}

async function frozenRounds(h: Harness): Promise<void> {
  const rounds = h.scale.frozenRounds
  const steps = h.process?.writeSteps ?? []
  const limitation = h.frozenWriterLimitation
  const counts = { rounds, randomRounds: 0, steppedRounds: 0, limitedRounds: 0, maxTakeoverMs: 0 }
  h.report(counts)
  if (rounds < MIN_FROZEN_ROUNDS) {
    fail(
      `the frozen-writer tier is configured with ${rounds} rounds, below the floor of ${MIN_FROZEN_ROUNDS}: it would prove nothing`,
    )
  }
  if (limitation !== undefined && steps.length === 0) {
    fail(
      'a frozen-writer limitation is declared but process.writeSteps is empty: the tier must freeze the holder inside its write to verify it',
    )
  }
  const holder = await h.child({ stepped: steps.length > 0 })
  const held: Array<(token: number) => void> = []
  holder.onMessage((message) => {
    if (message.type === 'frozen-held') held.shift()?.(message.token)
  })
  const contender = await h.backend({ realClock: true })
  for (let round = 0; round < rounds; round++) {
    const stepped = steps.length > 0 && round % 2 === 1
    const step = stepped ? (steps[(round >> 1) % steps.length] as string) : null
    const skip = stepped ? (round >> 1) % 2 : 0
    const label = `round ${round} (${step === null ? 'random' : `${step} in a ${skip === 0 ? 'put' : 'renew'}`})`
    const key = `frozen/${round}`
    const heldToken = nextHeld(held)
    const wokeReply = holder.request<FrozenWoke>({
      type: 'frozen-holder',
      key,
      ttlMs: TTL_MS,
      step,
      skip,
    })
    let settled = false
    void wokeReply.then(
      () => {
        settled = true
      },
      () => {
        settled = true
      },
    )
    const token = await Promise.race([heldToken, wokeReply.then(() => fail(`${label}: no lease`))])
    if (step === null) {
      // Anywhere in the holder's loop, after it has been writing for a while.
      await sleep(20 + Math.random() * (TTL_MS / 2))
      holder.signal('SIGSTOP')
    }
    await waitStopped(holder.pid, step === null ? 5000 : 30_000)
    const stoppedAt = Date.now()
    if (settled) fail(`${label}: the holder stopped writing before it was frozen`)
    let attempt: Attempt
    let mine: ValueMeta | undefined
    try {
      attempt = await takeOver(contender, key, stoppedAt, label, limitation)
      // Written while the holder still sleeps: its in-flight write must not land over this.
      if ('lease' in attempt)
        mine = await contender.put(key, bytes('contender'), { lease: attempt.lease })
    } finally {
      holder.signal('SIGCONT')
    }
    if ('limited' in attempt) {
      // The frozen holder's transaction committed when it woke, as it was valid when it began;
      // its lease expired meanwhile, so what follows is refused, and its release (nobody took
      // over) removes it.
      ensureRefused(await wokeReply, label, 'ok:true')
      const lease = await h.acquireAfterExpiry(contender, key, 'contender', 60_000)
      ensure(lease.token > token, `${label}: takeover token ${lease.token} > ${token}`)
      const meta = await contender.put(key, bytes('contender'), { lease })
      await ensureContenderIntact(contender, key, lease, meta, label)
      counts.limitedRounds++
    } else {
      if (step !== null && limitation !== undefined) {
        fail(
          `${label}: a frozen-writer limitation is declared, yet the contender took over while the holder was frozen inside its write: remove the declaration`,
        )
      }
      const takeoverMs = attempt.takenAt - stoppedAt
      counts.maxTakeoverMs = Math.max(counts.maxTakeoverMs, takeoverMs)
      ensure(
        takeoverMs <= TTL_MS + MARGIN_MS,
        `${label}: takeover ${takeoverMs} ms after the stop, allowed TTL ${TTL_MS} + ${MARGIN_MS} ms`,
      )
      ensure(
        attempt.lease.token > token,
        `${label}: takeover token ${attempt.lease.token} > ${token}`,
      )
      ensureRefused(await wokeReply, label, 'ok:false')
      await ensureContenderIntact(contender, key, attempt.lease, mine as ValueMeta, label)
    }
    if (step === null) counts.randomRounds++
    else counts.steppedRounds++
    h.report(counts)
  }
  if (counts.limitedRounds > 0 && limitation !== undefined) {
    h.declareLimitation(
      `a holder frozen inside its write blocks the takeover: ${counts.limitedRounds} of ${rounds} contenders failed fast with ${limitation.code} (${String(limitation.message)})`,
    )
  }
}

/** The frozen-writer tier: a holder stopped mid-write must not block a takeover. */
export const frozenWriterChecks: ContractCheck[] = [
  check(
    'multi-process',
    'a holder frozen mid-write never blocks a takeover and is refused when it wakes',
    frozenRounds,
    { skip: multiProcessSkip, timeoutMs: 600_000 },
  ),
]
