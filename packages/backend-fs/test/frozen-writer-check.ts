import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import { expect } from 'vitest'

/**
 * The frozen-writer check, written so it can move into the shared contract
 * suite as is: a holder process is stopped (SIGSTOP) in the middle of writing
 * under its lease; a contender must take the lease over within the lease's
 * TTL plus `marginMs` of the stop, and when the holder wakes, what it had not
 * committed, its renew, its fenced writes and its release must all be refused
 * and change nothing.
 *
 * Each round, the child (`fixtures/frozen-holder.ts`, speaking the protocol
 * described there) takes the lease of a fresh key and loops fenced put +
 * renew. It is stopped either by the parent after a random delay (anywhere in
 * its loop, mostly inside a write's syscalls) or, where the backend offers
 * write steps, by itself at an exact step of a write.
 */

/** A line-reading handle on a holder child. */
interface Holder {
  readonly child: ChildProcess
  next(prefix: string): Promise<string>
}

function holderOf(child: ChildProcess): Holder {
  const lines: string[] = []
  const waiters: Array<() => void> = []
  let buffer = ''
  let ended = false
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8')
    const parts = buffer.split('\n')
    buffer = parts.pop() ?? ''
    lines.push(...parts)
    for (const wake of waiters.splice(0)) wake()
  })
  child.once('exit', () => {
    ended = true
    for (const wake of waiters.splice(0)) wake()
  })
  return {
    child,
    async next(prefix: string): Promise<string> {
      for (;;) {
        const index = lines.findIndex((line) => line.startsWith(prefix) || line.startsWith('error'))
        if (index >= 0) {
          const [line] = lines.splice(index, 1) as [string]
          if (line.startsWith('error')) throw new Error(`holder: ${line}`)
          return line.slice(prefix.length).trim()
        }
        if (ended) throw new Error(`holder exited before "${prefix}"`)
        await new Promise<void>((resolve) => waiters.push(resolve))
      }
    },
  }
}

/** Whether `pid` is stopped (state T in /proc), so timing starts at the real stop. */
async function waitStopped(pid: number): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    if (state === 'T' || state === 't') return
    await sleep(1)
  }
  throw new Error(`process ${pid} did not stop`)
}

/** Options of {@link checkFrozenWriterTakeover}. */
export interface FrozenWriterCheck {
  /** A new backend instance on the storage the holder uses (the contender). */
  readonly create: () => Backend
  /** Starts a holder child (`fixtures/frozen-holder.ts`) on the same storage and namespace. */
  readonly spawnHolder: () => ChildProcess
  /** Rounds to run. */
  readonly rounds: number
  /** Lease TTL of the holder. */
  readonly ttlMs: number
  /** Allowed lateness of the takeover past the TTL (the contract: at most 1000 ms). */
  readonly marginMs: number
  /**
   * Write steps the backend's stepped child can stop at (cycled through, one
   * per round, alternating a put and a renew); empty: the parent stops the
   * child at random moments only. Random rounds always run as well.
   */
  readonly steps: readonly string[]
  /** Where each round's outcome is logged. */
  readonly log?: (line: string) => void
}

/** What one round saw. */
export interface FrozenRound {
  readonly mode: string
  readonly takeoverMs: number
  readonly woke: { failed: string; renew: string; put: string; release: string; writes: number }
}

/** Runs the check; fails the test on the first round that breaks a rule. */
export async function checkFrozenWriterTakeover(check: FrozenWriterCheck): Promise<FrozenRound[]> {
  const contender = check.create()
  const holder = holderOf(check.spawnHolder())
  const results: FrozenRound[] = []
  const pid = holder.child.pid as number
  try {
    for (let round = 0; round < check.rounds; round++) {
      const stepped = check.steps.length > 0 && round % 2 === 1
      const step = stepped ? (check.steps[(round >> 1) % check.steps.length] as string) : '-'
      const skip = stepped ? (round >> 1) % 2 : 0
      const key = `frozen/${round}`
      holder.child.stdin?.write(`round ${key} ${check.ttlMs} ${step} ${skip}\n`)
      await holder.next('held ')
      if (stepped) {
        await holder.next('stopping ')
      } else {
        // Anywhere in the loop, after it has been writing for a while.
        await sleep(20 + Math.random() * (check.ttlMs / 2))
        holder.child.kill('SIGSTOP')
      }
      await waitStopped(pid)
      const stoppedAt = Date.now()
      let lease: Lease
      for (;;) {
        try {
          lease = await contender.acquireLease(key, { holder: 'contender', ttlMs: 60_000 })
          break
        } catch (error) {
          if (!isAgentStateError(error, 'LEASE_HELD')) throw error
          expect(Date.now() - stoppedAt, `round ${round}: still held`).toBeLessThan(
            check.ttlMs + check.marginMs + 5000,
          )
          await sleep(5)
        }
      }
      const takeoverMs = Date.now() - stoppedAt
      const mine = await contender.put(key, new TextEncoder().encode('contender'), { lease })
      holder.child.kill('SIGCONT')
      const woke = JSON.parse(await holder.next('woke ')) as FrozenRound['woke']
      const mode = stepped ? `${step}/${skip === 0 ? 'put' : 'renew'}` : 'random'
      check.log?.(`round ${round} (${mode}): takeover ${takeoverMs} ms, ${JSON.stringify(woke)}`)
      expect(takeoverMs, `round ${round} (${mode}): takeover time`).toBeLessThanOrEqual(
        check.ttlMs + check.marginMs,
      )
      // The first operation that failed after the takeover, and everything after it.
      expect(woke.failed, `round ${round} (${mode})`).toBe('LEASE_LOST')
      expect(woke.renew, `round ${round} (${mode})`).toBe('LEASE_LOST')
      expect(woke.put, `round ${round} (${mode})`).toBe('LEASE_LOST')
      expect(woke.release, `round ${round} (${mode}): release of a superseded lease`).toBe('false')
      // Nothing of the woken holder landed over the contender's write and lease.
      const after = await contender.get(key)
      expect(after?.meta.version, `round ${round} (${mode})`).toBe(mine.version)
      expect(new TextDecoder().decode(after?.value)).toBe('contender')
      expect((await contender.getLease(key))?.token).toBe(lease.token)
      results.push({ mode, takeoverMs, woke })
    }
  } finally {
    holder.child.kill('SIGCONT')
    holder.child.kill('SIGKILL')
    await contender.close()
  }
  return results
}
