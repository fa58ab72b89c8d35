import { randomBytes } from 'node:crypto'
import { type Backend, redactUrl } from '@agent-state/core'
import {
  type EffectHandlers,
  getWake,
  idempotencyKeyOf,
  inspectRun,
  inspectWorker,
  openDaemonQueue,
  openSession,
  publishEvent,
  readEffect,
  readWorkerWakes,
  resumeSession,
  startWakeDispatcher,
  startWorker,
  type Worker,
} from '@agent-state/runtime'
import { runHeadKey, workerSnapshotKey } from '@agent-state/runtime/internal'
import { connect } from '../connect.js'
import { CliError, EXIT } from '../exit-codes.js'
import { type AgentProcess, DEMO_EFFECT_ID, startAgent, startDemoProcess } from './agent-process.js'
import { providerTicketHandler } from './ticket-handler.js'

/** One line of the demo's timeline. */
export interface TimelineEntry {
  /** Milliseconds since the demo started. */
  readonly atMs: number
  /** Who acted: `demo`, or an agent process as `agent <pid>`. */
  readonly who: string
  readonly text: string
}

/** What a step needs: the backend, where the demo keeps its records, and the timeline. */
export interface DemoContext {
  readonly url: string
  readonly namespace: string
  readonly backend: Backend
  readonly workerId: string
  /** The effect-ledger run the worker's ticket is filed in. */
  readonly runId: string
  /** Adds a line to the timeline (printed as it happens). */
  note(who: string, text: string): void
  /** Agent processes started by steps, kept for later steps and stopped at the end. */
  readonly agents: Map<string, AgentProcess>
  /** Values steps hand to later steps. */
  readonly facts: Map<string, unknown>
}

/**
 * One step of the story. `run` throws a {@link DemoFailure} (or anything)
 * when the product did not behave as the step expects.
 */
export interface DemoStep {
  readonly title: string
  run(ctx: DemoContext): Promise<void>
}

/** A step saw behaviour other than what it expects. */
export class DemoFailure extends Error {}

function expectThat(condition: boolean, what: string): void {
  if (!condition) throw new DemoFailure(what)
}

const sessionStep: DemoStep = {
  title: 'a session with a handoff',
  async run(ctx) {
    const planner = await openSession(ctx.backend, {
      sessionId: 'triage',
      writer: 'planner',
      conflictPolicy: 'error',
    })
    await planner.write('plan.md', '# Plan\n1. collect findings\n2. summarize\n')
    await planner.handoff({ status: 'ready', next_stage: 'research', worker: ctx.workerId })
    ctx.note(
      'demo',
      'planner wrote sessions/triage/data/plan.md and handed off to the research stage',
    )
    const next = await resumeSession(ctx.backend, 'triage', { writer: 'research' })
    const handoff = await next.readHandoff()
    const summary = handoff?.summary as { status?: string; next_stage?: string } | undefined
    expectThat(
      summary?.status === 'ready' && summary.next_stage === 'research',
      'the handoff reads back as written',
    )
    ctx.note(
      'demo',
      `research stage read the handoff: status ${summary?.status}, plan.md present: ${(await next.read('plan.md')) !== null}`,
    )
  },
}

/** The agent's command line for one role (see `demo-agent.ts`). */
function agentArgs(ctx: DemoContext, role: string): string[] {
  return [ctx.url, ctx.namespace, role, ctx.workerId, ctx.runId, String(ctx.facts.get('provider'))]
}

/** How often the provider applied an effect, by default the demo's ticket (its `/log`, read over HTTP). */
async function providerApplied(
  ctx: DemoContext,
  runId: string = ctx.runId,
  effectId: string = DEMO_EFFECT_ID,
): Promise<number> {
  const response = await fetch(`${String(ctx.facts.get('provider'))}/log`)
  const log = (await response.json()) as { applied: Record<string, number> }
  return log.applied[idempotencyKeyOf(runId, effectId)] ?? 0
}

/** The daemon queue's events: findings, a ticket to file (the side effect), one more finding. */
const DEMO_EVENTS = [
  { kind: 'finding', text: 'login fails for SSO users' },
  { kind: 'finding', text: 'the token refresh races the logout' },
  { kind: 'file-ticket', title: 'SSO logout race' },
  { kind: 'finding', text: 'a retry storm follows every outage' },
]

const workStep: DemoStep = {
  title: 'a worker consumes queued events and files a ticket; SIGKILL lands mid-effect',
  async run(ctx) {
    const provider = startDemoProcess('demo-provider', [])
    ctx.agents.set('provider', provider)
    const listening = await provider.waitFor((e) => e.event === 'listening', 30_000)
    ctx.facts.set('provider', `http://127.0.0.1:${String(listening.port)}`)
    ctx.note(
      `provider ${provider.pid}`,
      `a ticket tracker on 127.0.0.1:${String(listening.port)}: records requests by idempotency key`,
    )
    const agent = startAgent(agentArgs(ctx, 'work'))
    ctx.agents.set('work', agent)
    const started = await agent.waitFor((e) => e.event === 'started', 30_000)
    ctx.note(
      `agent ${agent.pid}`,
      `spawned daemon ${ctx.workerId}: a worker (lease token ${String(started.token)}) fed by a durable queue`,
    )
    const queue = await openDaemonQueue(ctx.backend, ctx.workerId)
    for (const event of DEMO_EVENTS) await queue.trigger(event)
    ctx.note('demo', `triggered ${DEMO_EVENTS.length} events: 3 findings and a ticket to file`)
    const second = await agent.waitFor((e) => e.event === 'checkpoint' && e.turn === 2, 30_000)
    ctx.note(
      `agent ${agent.pid}`,
      `handled events 0-${String(second.seq)}: each acknowledged with a checkpoint (a fenced write)`,
    )
    const claimed = await agent.waitFor((e) => e.event === 'claimed', 30_000)
    await agent.waitFor((e) => e.event === 'dispatching', 30_000)
    ctx.note(
      `agent ${agent.pid}`,
      `took event ${String(claimed.seq)} (file a ticket), opened run ${ctx.runId}, recorded the effect as submitted and called the provider`,
    )
    const deadline = Date.now() + 30_000
    // Watched while waiting, so a failure says whether the agent was still there to be answered.
    let agentEnd: string | undefined
    void agent.exited.then((end) => {
      agentEnd = `the agent ended meanwhile, ${end.signal === null ? `code ${String(end.code)}` : `by ${end.signal}`}`
    })
    while ((await providerApplied(ctx)) === 0) {
      expectThat(
        Date.now() < deadline,
        `the provider applies the effect within 30 s (${agentEnd ?? 'the agent is still running'})`,
      )
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
    agent.child.kill('SIGKILL')
    const end = await agent.exited
    // An agent that lost its lease while alive (it could not run for a whole TTL) ends itself.
    const why =
      end.signal === 'SIGKILL'
        ? ''
        : await agent
            .waitFor((e) => e.event === 'failed', 0)
            .then(
              (failed) => ` (it ended first: ${String(failed.code)}: ${String(failed.message)})`,
              () => ` (it ended first, code ${String(end.code)})`,
            )
    expectThat(end.signal === 'SIGKILL', `the agent process died by SIGKILL${why}`)
    ctx.note(
      'demo',
      `killed agent ${agent.pid} with SIGKILL after the provider filed the ticket, before its answer reached the agent`,
    )
    const run = await inspectRun(ctx.backend, ctx.runId)
    const effect = run.incomplete.find((record) => record.effectId === DEMO_EFFECT_ID)
    expectThat(
      effect?.state === 'submitted',
      'the ledger holds the effect as submitted (outcome unknown)',
    )
    const body = await inspectWorker(ctx.backend, ctx.workerId)
    const turn = (body.state as { app?: { turn?: number } }).app?.turn
    expectThat(
      body.status === 'running' && turn === 2,
      'the snapshot holds both acknowledged turns',
    )
    const counts = await queue.counts()
    expectThat(counts.head === 2, 'the ticket event is still at the head of the queue')
    ctx.facts.set('turn', turn)
    ctx.facts.set('token', started.token)
    ctx.facts.set('holder', started.holder)
    ctx.note(
      'demo',
      `left behind: effect ${DEMO_EFFECT_ID} "submitted" (did the call land? the ledger cannot know), event 2 unacknowledged at the head, snapshot at turn ${turn}`,
    )
  },
}

const expiryStep: DemoStep = {
  title: "the dead owner's leases run out",
  async run(ctx) {
    const key = workerSnapshotKey(ctx.workerId)
    const holder = String(ctx.facts.get('holder'))
    const token = Number(ctx.facts.get('token'))
    // The owner renewed its leases until it died, so they outlive it by at most one TTL. How much
    // of it is left when this line runs depends on the machine's load, so a lease already gone is
    // no failure; a lease still there must be the dead owner's: nobody takes the worker early.
    const lease = await ctx.backend.getLease(key)
    expectThat(
      lease === null || (lease.holder === holder && lease.token === token),
      `a worker lease still live is the killed owner's (${holder}, token ${token}; found ${lease?.holder}, token ${lease?.token})`,
    )
    const left =
      lease === null
        ? `worker lease of ${holder} (token ${token}) already ran out`
        : `worker lease held by ${lease.holder}, expires in ${Math.max(0, lease.expiresAt - Date.now())} ms`
    ctx.note('demo', `${left} (run and delivery leases alike)`)
    const deadline = Date.now() + 30_000
    while ((await ctx.backend.getLease(key)) !== null) {
      expectThat(Date.now() < deadline, 'the lease expires within 30 s')
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    ctx.note('demo', 'the lease expired: nobody owns the worker now')
  },
}

const resumeStep: DemoStep = {
  title:
    'a fresh process resumes: the unknown effect is reconciled, not repeated; a second resumer is refused',
  async run(ctx) {
    const resumer = startAgent(agentArgs(ctx, 'resume'))
    ctx.agents.set('resume', resumer)
    const resumed = await resumer.waitFor(
      (e) => e.event === 'resumed' || e.event === 'refused',
      30_000,
    )
    expectThat(
      resumed.event === 'resumed',
      `the fresh process resumes (${String(resumed.code ?? '')})`,
    )
    expectThat(resumed.turn === ctx.facts.get('turn'), 'it continues from the stored turn')
    expectThat(
      Number(resumed.token) > Number(ctx.facts.get('token')),
      'with a larger fencing token',
    )
    ctx.note(
      `agent ${resumer.pid}`,
      `resumed worker ${ctx.workerId} at turn ${String(resumed.turn)} with fencing token ${String(resumed.token)} (the killed owner had ${String(ctx.facts.get('token'))})`,
    )
    const decisions = (resumed.decisions ?? []) as { effectId?: string; rule?: string }[]
    const decision = decisions.find((d) => d.effectId === DEMO_EFFECT_ID)
    expectThat(
      decision?.rule === 'reconciler:confirmed',
      `the open reconciles the effect through the provider (${JSON.stringify(decisions)})`,
    )
    const effect = await readEffect(ctx.backend, ctx.runId, DEMO_EFFECT_ID)
    expectThat(effect?.state === 'confirmed', 'the effect is recorded confirmed')
    expectThat((await providerApplied(ctx)) === 1, 'the provider applied it once, not again')
    ctx.note(
      `agent ${resumer.pid}`,
      `opened run ${ctx.runId} (attempt ${String(resumed.runAttempts)}): asked the provider by idempotency key; it had filed ${(effect?.result as { ticket?: string } | null)?.ticket}, so the ledger recorded "confirmed" with that result instead of calling again`,
    )
    const contender = startAgent(agentArgs(ctx, 'contend'))
    ctx.agents.set('contend', contender)
    const answer = await contender.waitFor(
      (e) => e.event === 'resumed' || e.event === 'refused',
      30_000,
    )
    expectThat(
      answer.event === 'refused' && answer.code === 'CONCURRENT_RESUME',
      `a second resumer is refused with CONCURRENT_RESUME (${String(answer.code)})`,
    )
    expectThat(
      answer.runCode === 'RUN_OWNED',
      `and the run with RUN_OWNED (${String(answer.runCode)})`,
    )
    ctx.note(
      `agent ${contender.pid}`,
      `tried to resume the same worker and run: refused, ${String(answer.code)} and ${String(answer.runCode)}`,
    )
  },
}

const redeliveryStep: DemoStep = {
  title: 'the event in flight at the kill comes first; the worker finishes',
  async run(ctx) {
    const resumer = ctx.agents.get('resume')
    expectThat(resumer !== undefined, 'the resumer is still running')
    if (resumer === undefined) return
    resumer.child.stdin?.write('go\n')
    const first = await resumer.waitFor((e) => e.event === 'delivered', 30_000)
    expectThat(
      first.seq === 2 && first.attempt === 2,
      `event 2 is re-delivered first, attempt 2 (got ${String(first.seq)}, attempt ${String(first.attempt)})`,
    )
    const ticket = await resumer.waitFor((e) => e.event === 'ticket', 30_000)
    ctx.note(
      `agent ${resumer.pid}`,
      `event 2 re-delivered first (attempt 2: it was in flight at the kill); its effect returned the recorded ${String(ticket.ticket)} without dispatching`,
    )
    const completed = await resumer.waitFor((e) => e.event === 'completed', 30_000)
    const body = await inspectWorker(ctx.backend, ctx.workerId)
    expectThat(body.status === 'done', 'the worker finishes')
    const run = await inspectRun(ctx.backend, ctx.runId)
    expectThat(run.head.status === 'completed', 'the run is completed')
    expectThat((await providerApplied(ctx)) === 1, 'the provider applied the effect exactly once')
    ctx.note(
      `agent ${resumer.pid}`,
      `handled event 3, finished the worker at turn ${String(completed.turn)} (${body.status}) and the run (${run.head.status}); the provider filed the ticket exactly once`,
    )
  },
}

/** The worker the wake step parks, the run it owns and the topic that wakes it. */
export const DEMO_WAKE = {
  workerId: 'reviewer',
  runId: 'reviewer-fix',
  topic: 'fix-chosen',
  /**
   * The timeout it also parks with. The event comes first, so the demo never waits for it: the
   * dispatcher cancels it when the event wakes the worker (no short timeout, no injected clock).
   */
  timeoutMinutes: 5,
} as const

/** The run's effects: a review note before parking, the fix filed after the wake. */
const REVIEW_EFFECTS = ['review-1', 'fix-1'] as const

/** What the woken reviewer did. */
interface Woken {
  readonly wakeId: string
  /** The fencing token of the lease it was resumed under. */
  readonly token: number
  /** The ticket it filed after the wake. */
  readonly fix: string | null
}

/** The woken reviewer's loop: reopens its run under its new lease, files the chosen fix, finishes. */
async function continueReview(
  worker: Worker,
  wakeId: string,
  handlers: EffectHandlers,
): Promise<Woken> {
  const token = worker.lease?.token ?? 0
  const run = await worker.reopenRun({ handlers })
  const input = worker.resumeInput as { payload?: { fix?: string } }
  const filed = (await run.effect('ticket', REVIEW_EFFECTS[1], {
    title: `fix: ${input.payload?.fix}`,
    findings: [],
  })) as { ticket?: string }
  await run.complete()
  await worker.complete({ fix: filed.ticket ?? null })
  return { wakeId, token, fix: filed.ticket ?? null }
}

const wakeStep: DemoStep = {
  title:
    'a worker parks on a timeout and an event; a wake dispatcher wakes it on the event and it continues its run',
  async run(ctx) {
    const { workerId, runId, topic, timeoutMinutes } = DEMO_WAKE
    const handlers = { ticket: providerTicketHandler(String(ctx.facts.get('provider')), false) }
    const reviewer = await startWorker(ctx.backend, { workerId, holder: `demo:${process.pid}` })
    const run = await reviewer.openRun(runId, { handlers })
    const note = (await run.effect('ticket', REVIEW_EFFECTS[0], {
      title: 'review: SSO logout race',
      findings: ['two fixes proposed'],
    })) as { ticket?: string }
    await reviewer.suspend(
      {
        reason: `waits for a fix to be chosen (event ${topic})`,
        conditions: {
          timeout: { durationMinutes: timeoutMinutes, onTimeout: 'resume_with_summary' },
          onEvent: topic,
        },
      },
      { state: { tickets: [note.ticket ?? null] } },
    )
    const registration = await readWorkerWakes(ctx.backend, workerId)
    const timeoutWake = registration?.wakeIds[0] ?? ''
    const parked = await getWake(ctx.backend, timeoutWake)
    expectThat(
      parked.cause === 'timeout' && parked.state === 'pending' && registration?.topic === topic,
      'the parked worker has a pending timeout wake and waits on the topic',
    )
    ctx.note(
      'demo',
      `worker ${workerId} filed ${note.ticket} in run ${runId} and parked: woken by event ${topic}, or by its ${timeoutMinutes}-minute timeout (a pending wake)`,
    )
    let wake: (result: Woken) => void = () => undefined
    let fail: (error: unknown) => void = () => undefined
    const woken = new Promise<Woken>((resolve, reject) => {
      wake = resolve
      fail = reject
    })
    const dispatcher = startWakeDispatcher(ctx.backend, {
      handlers: {},
      dispatcherId: `demo-dispatcher-${process.pid}`,
      intervalMs: 100,
      workers: {
        holder: `dispatcher:${process.pid}`,
        async onResumed(worker, fired) {
          try {
            wake(await continueReview(worker, fired.id, handlers))
          } catch (error) {
            fail(error)
            throw error
          }
        },
      },
    })
    try {
      ctx.note('demo', 'started a wake dispatcher in this process (it ticks every 100 ms)')
      const published = await publishEvent(ctx.backend, topic, { fix: 'serialize token refresh' })
      expectThat(published.wakeIds.length === 1, 'the publish registers one wake, for the reviewer')
      ctx.note('demo', `published event ${topic}: a wake for ${workerId} registered`)
      const deadline = setTimeout(
        () => fail(new DemoFailure('the worker wakes within 30 s')),
        30_000,
      )
      const { token, wakeId, fix } = await woken.finally(() => clearTimeout(deadline))
      const fired = await getWake(ctx.backend, wakeId)
      const cancelled = await getWake(ctx.backend, timeoutWake)
      const body = await inspectWorker(ctx.backend, workerId)
      const view = await inspectRun(ctx.backend, runId)
      expectThat(
        fired.state === 'fired' && fired.cause === 'event',
        'the event wake is recorded fired',
      )
      expectThat(cancelled.state === 'cancelled', 'the timeout wake is cancelled, not fired')
      expectThat(
        body.status === 'done' && body.audit.some((e) => e.event === 'run_reopened'),
        'the woken worker reopened its run and finished',
      )
      expectThat(
        view.head.status === 'completed' && view.head.attemptCount === 2,
        'the run was continued by a second attempt and completed',
      )
      for (const effectId of REVIEW_EFFECTS) {
        expectThat(
          (await providerApplied(ctx, runId, effectId)) === 1,
          `the provider applied ${effectId} once`,
        )
      }
      ctx.note(
        `dispatcher`,
        `fired the event wake ${fired.firing?.latenessMs ?? 0} ms after the publish: resumed ${workerId} with the event as input; its timeout wake cancelled, not fired`,
      )
      ctx.note(
        workerId,
        `reopened run ${runId} under its new lease (token ${token}, attempt ${view.head.attemptCount}): ${REVIEW_EFFECTS[0]} not repeated, filed ${String(fix)}; run ${view.head.status}, worker ${body.status}`,
      )
    } finally {
      await dispatcher.stop()
    }
  },
}

/** The story, in order. */
export const DEMO_STEPS: readonly DemoStep[] = [
  sessionStep,
  workStep,
  expiryStep,
  resumeStep,
  redeliveryStep,
  wakeStep,
]

/**
 * How the user started this command, so the printed follow-up commands run as
 * shown: through the workspace script (`npx -y pnpm@x agent-state`, found from
 * pnpm's environment) or as an installed `agent-state`.
 */
function invokedAs(): string {
  if (process.env.npm_lifecycle_event !== 'agent-state') return 'agent-state'
  const pnpm = /\bpnpm\/(\S+)/.exec(process.env.npm_config_user_agent ?? '')?.[1]
  return pnpm === undefined ? 'npm run agent-state --' : `npx -y pnpm@${pnpm} agent-state`
}

/**
 * Runs the demo on a backend URL, printing the timeline as it goes. Resolves
 * whether every step behaved as expected.
 */
export async function runDemo(
  url: string,
  timeoutMs: number,
  print: (line: string) => void,
  steps: readonly DemoStep[] = DEMO_STEPS,
): Promise<boolean> {
  const namespace = `demo-${new Date()
    .toISOString()
    .replace(/[-:.TZ]/g, '')
    .slice(0, 14)}-${randomBytes(2).toString('hex')}`
  const backend = await connect(url, { namespace, timeoutMs })
  const started = Date.now()
  const agents = new Map<string, AgentProcess>()
  const shown = redactUrl(url)
  try {
    if (!backend.capabilities.multiProcess) {
      throw new CliError(
        `${shown}: the demo runs its agent in several processes, and this backend is not shared between processes`,
        EXIT.USAGE,
      )
    }
    print(`agent-state demo on ${shown}, namespace ${namespace}`)
    const ctx: DemoContext = {
      url,
      namespace,
      backend,
      workerId: 'researcher',
      runId: 'researcher-ticket',
      agents,
      facts: new Map(),
      note(who, text) {
        const seconds = ((Date.now() - started) / 1000).toFixed(1).padStart(5)
        print(`  ${seconds}s  ${who.padEnd(12)} ${text}`)
      },
    }
    for (const [index, step] of steps.entries()) {
      print(`${index + 1}. ${step.title}`)
      try {
        await step.run(ctx)
      } catch (error) {
        const why =
          error instanceof DemoFailure ? `expected: ${error.message}` : (error as Error).message
        print(`  FAILED  ${why}`)
        return false
      }
    }
    print(`every step behaved as expected (${((Date.now() - started) / 1000).toFixed(1)} s)`)
    print('recovered after the kill, and why:')
    print('  - the worker, from its last checkpoint: its owner had died and its lease ran out')
    print(
      `  - effect ${DEMO_EFFECT_ID}: "submitted" means the call may have landed, so the provider was asked`,
    )
    print(
      '    by idempotency key; it had applied it, so its result was recorded instead of calling again',
    )
    print(
      '  - queue event 2: never acknowledged, so it stayed at the head and came first (attempt 2)',
    )
    const flags = `--url '${shown}' --namespace ${namespace}`
    const command = invokedAs()
    print(`look at what it left${shown === url ? '' : ' (put the password back in the URL)'}:`)
    print(`  ${command} sessions ${flags}`)
    print(`  ${command} workers ${flags}`)
    print(`  ${command} daemons ${flags}`)
    print(`  ${command} runs ${flags}`)
    print(`  ${command} stat ${workerSnapshotKey(ctx.workerId)} ${flags}`)
    print(`  ${command} stat ${runHeadKey(ctx.runId)} ${flags}`)
    print(`  ${command} ls -r -l ${flags}`)
    print(`or all of it in a browser (read-only, on 127.0.0.1; Ctrl-C stops it):`)
    print(`  ${command} ui ${flags}`)
    print(`  (to resolve effects or close workers from it: add --allow-actions --operator <you>)`)
    return true
  } finally {
    for (const agent of agents.values())
      if (agent.child.exitCode === null) agent.child.kill('SIGKILL')
    await backend.close().catch(() => undefined)
  }
}
