/**
 * The scripted agent of `agent-state demo`, one role per process:
 *
 *   demo-agent <url> <namespace> work    <workerId> <runId> <provider>  consumes events, killed mid-effect
 *   demo-agent <url> <namespace> resume  <workerId> <runId> <provider>  takes over, waits for "go", finishes
 *   demo-agent <url> <namespace> contend <workerId> <runId> <provider>  tries to resume the same at once
 *
 * The worker is a daemon (a worker fed by a durable queue). Its events are
 * findings, each checkpointed with the event's acknowledgement, and one
 * `file-ticket` event whose turn records a side effect in the effect ledger:
 * a ticket filed at the provider (`demo-provider.ts`). Deterministic: no
 * model, no network beyond the backend and the local provider. Each process
 * prints one JSON line per event on stdout; the demo builds its timeline from them.
 */
import { isAgentStateError, openBackend } from '@agent-state/core'
import {
  type Daemon,
  type EffectHandler,
  openRun,
  type Run,
  resumeDaemon,
  resumeRun,
  spawnDaemon,
} from '@agent-state/runtime'
import { backendLoading } from '../backend-importer.js'
import { DEMO_EFFECT_ID } from './agent-process.js'
import { providerTicketHandler } from './ticket-handler.js'

/**
 * Leases of the demo's worker, run and deliveries: short, so a dead owner's run out within the demo.
 * This is no race with the demo's pace: an owner that waits renews what it owns every
 * {@link DEMO_RENEW_MS} (see {@link keepAlive}), so the TTL bounds only how long a live agent may go
 * unscheduled (as every lease does), never how long a step, the kill or the demo's checks take.
 */
const DEMO_LEASE_TTL_MS = 1500
/** How often a waiting owner renews its 1.5 s leases: a sixth of the TTL. */
const DEMO_RENEW_MS = 250
/** The resumer's leases: it holds the worker and the run while the demo shows a contender refused. */
const RESUMER_LEASE_TTL_MS = 60_000

/** One event of the demo's queue. */
type DemoEvent = { kind: 'finding'; text: string } | { kind: 'file-ticket'; title: string }
type DemoState = { turn: number; notes: string[]; ticket?: string }

const argv = process.argv.slice(2)
if (argv.length !== 6) {
  throw new Error(
    'usage: demo-agent <url> <namespace> work|resume|contend <workerId> <runId> <provider>',
  )
}
const [url, namespace, role, workerId, runId, provider] = argv as [
  string,
  string,
  string,
  string,
  string,
  string,
]
const say = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ pid: process.pid, ...event })}\n`)
}
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const backend = await openBackend(url, { namespace, ...backendLoading(url) })
const holder = `${role}:${process.pid}`

/** The provider's ticket handler of this process. */
const ticketHandler = (hold: boolean, onCall?: () => void): EffectHandler =>
  providerTicketHandler(provider, hold, onCall)

const ticketRequest = (state: DemoState, title: string) => ({ title, findings: state.notes })

function handleFinding(delivery: { event: unknown }, state: DemoState): DemoState {
  const event = delivery.event as DemoEvent & { kind: 'finding' }
  return { ...state, turn: state.turn + 1, notes: [...state.notes, event.text] }
}

/** The role's script; a failure is printed as a `failed` event, so the demo can say why. */
async function main(): Promise<void> {
  if (role === 'work') {
    const daemon = await spawnDaemon(backend, {
      daemonId: workerId,
      holder,
      leaseTtlMs: DEMO_LEASE_TTL_MS,
      visibilityTimeoutMs: DEMO_LEASE_TTL_MS,
      state: { turn: 0, notes: [] },
    })
    say({ event: 'started', token: daemon.worker.lease?.token, holder })
    for (;;) {
      const delivery = await daemon.next()
      if (delivery === null) {
        await daemon.heartbeat()
        await sleep(50)
        continue
      }
      const state = daemon.state as DemoState
      const event = delivery.event as DemoEvent
      if (event.kind === 'finding') {
        const next = handleFinding(delivery, state)
        await daemon.ack(delivery, { state: next })
        say({ event: 'checkpoint', seq: delivery.seq, turn: next.turn })
        continue
      }
      say({ event: 'claimed', seq: delivery.seq, attempt: delivery.attempt })
      // From here on this process makes no daemon call (the held effect never returns), so renewing
      // the worker and this delivery from a timer calls nothing concurrently; the run is renewed
      // only while its call is out, when it is not in use either.
      let run: Run | undefined
      let callOut = false
      const stopRenewing = keepAlive(async () => {
        await daemon.heartbeat()
        if (callOut) await run?.heartbeat()
      }, DEMO_RENEW_MS)
      run = await openRun(backend, runId, {
        handlers: {
          ticket: ticketHandler(true, () => {
            callOut = true
          }),
        },
        leaseTtlMs: DEMO_LEASE_TTL_MS,
      })
      await run.commitStep('draft', { title: event.title }, { next: 'file' })
      say({ event: 'dispatching', attempt: run.attempt.attemptId })
      // The provider applies it and keeps the answer back: the demo kills this process here.
      await run.effect('ticket', DEMO_EFFECT_ID, ticketRequest(state, event.title))
      await stopRenewing()
      say({ event: 'unexpected', text: 'the provider answered a held request' })
    }
  } else if (role === 'resume' || role === 'contend') {
    let daemon: Daemon
    try {
      daemon = await resumeDaemon(backend, workerId, {
        holder,
        leaseTtlMs: RESUMER_LEASE_TTL_MS,
        recoverRunning: true,
        cause: role === 'resume' ? 'previous owner killed' : 'a second resumer',
      })
    } catch (error) {
      // The contender also tries the run itself, which the resumer owns.
      const runCode = await resumeRun(backend, runId, {
        handlers: { ticket: ticketHandler(false) },
      }).then(
        async (run) => {
          await run.close()
          return 'OPENED'
        },
        (runError: unknown) => codeOf(runError),
      )
      say({ event: 'refused', code: codeOf(error), runCode, message: (error as Error).message })
      await backend.close()
      process.exit(0)
    }
    const run = await resumeWhenFree()
    const decisions = run.audit
      .filter(
        (entry) => entry.event === 'effect_reconciled' && entry.attemptId === run.attempt.attemptId,
      )
      .map((entry) => entry.detail)
    const state = daemon.state as DemoState
    say({
      event: 'resumed',
      token: daemon.worker.lease?.token,
      turn: state.turn,
      runAttempt: run.attempt.attemptId,
      runAttempts: run.attemptCount,
      decisions,
    })
    // Hold the worker and the run until the demo has shown the contender being refused, renewing
    // both meanwhile: however long that takes, the contender meets live leases.
    const stopRenewing = keepAlive(async () => {
      await daemon.heartbeat()
      await run.heartbeat()
    }, RESUMER_LEASE_TTL_MS / 12)
    await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()))
    await stopRenewing()
    let current = state
    for (
      let delivery = await nextDelivery(daemon);
      delivery !== null;
      delivery = await nextDelivery(daemon)
    ) {
      const event = delivery.event as DemoEvent
      say({ event: 'delivered', seq: delivery.seq, attempt: delivery.attempt, kind: event.kind })
      if (event.kind === 'finding') {
        current = handleFinding(delivery, current)
      } else {
        // Confirmed by the reconciler at open: this returns the stored result, no dispatch.
        const receipt = (await run.effect(
          'ticket',
          DEMO_EFFECT_ID,
          ticketRequest(current, event.title),
        )) as {
          ticket: string
        }
        await run.commitStep('file', { receipt }, { next: null })
        await run.complete()
        current = { ...current, turn: current.turn + 1, ticket: receipt.ticket }
        say({ event: 'ticket', ticket: receipt.ticket })
      }
      await daemon.ack(delivery, { state: current })
    }
    await daemon.worker.complete(
      { summary: `${current.notes.length} findings, ticket ${current.ticket}` },
      { state: current, iterations: 1 },
    )
    say({ event: 'completed', turn: current.turn })

    /** Opens the run once the killed owner's run lease has run out. */
    async function resumeWhenFree(): Promise<Run> {
      for (;;) {
        try {
          return await resumeRun(backend, runId, {
            handlers: { ticket: ticketHandler(false) },
            leaseTtlMs: RESUMER_LEASE_TTL_MS,
          })
        } catch (error) {
          if (!isAgentStateError(error, 'RUN_OWNED')) throw error
          const wait = Number(error.context.expiresAt) - Date.now()
          await sleep(Math.max(50, Math.min(wait + 20, 2000)))
        }
      }
    }
  }
}

try {
  await main()
} catch (error) {
  say({ event: 'failed', code: codeOf(error), message: (error as Error).message })
  process.exit(1)
}
await backend.close()
process.exit(0)

/**
 * Renews what this process owns at once, then every `intervalMs` while it waits, so its leases
 * outlive it by at most one TTL. A renewal that fails (`LEASE_LOST`: the process could not run for
 * a whole TTL) ends it as `failed`, loudly. The returned stop waits for a renewal in progress, so
 * the caller's next call never runs beside one.
 */
function keepAlive(renew: () => Promise<void>, intervalMs: number): () => Promise<void> {
  let stopped = false
  let wake: () => void = () => undefined
  const loop = (async () => {
    while (!stopped) {
      await renew()
      await new Promise<void>((resolve) => {
        wake = resolve
        setTimeout(resolve, intervalMs)
      })
    }
  })().catch((error: unknown) => {
    say({ event: 'failed', code: codeOf(error), message: (error as Error).message })
    process.exit(1)
  })
  return async () => {
    stopped = true
    wake()
    await loop
  }
}

/** The next event, waiting out a dead consumer's delivery lease (`DELIVERY_IN_FLIGHT`). */
async function nextDelivery(daemon: Daemon) {
  for (;;) {
    try {
      return await daemon.next()
    } catch (error) {
      if (!isAgentStateError(error, 'DELIVERY_IN_FLIGHT')) throw error
      await sleep(100)
    }
  }
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' ? code : 'UNKNOWN'
}
