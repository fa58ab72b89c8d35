/**
 * A run with a side effect, a crash after the target applied it, and a
 * resume in a fresh process that reconciles instead of paying twice.
 *
 *   node --import tsx examples/effect-ledger.ts crash  sqlite:./state.db http://127.0.0.1:8080 run-1
 *   node --import tsx examples/effect-ledger.ts resume sqlite:./state.db http://127.0.0.1:8080 run-1
 *
 * The provider is any HTTP service that applies `POST /apply` once per
 * `idempotency-key` header and answers `GET /status/<key>` with
 * `{"status":"confirmed","result":...}` or `{"status":"absent"}`.
 */
import { isAgentStateError, openBackend } from '@agent-state/core'
import { type EffectHandler, effectRejected, openRun, type Run } from '@agent-state/runtime'

const [
  phase,
  url = 'file:./.agent-state',
  provider = 'http://127.0.0.1:8080',
  runId = 'invoice-run',
] = process.argv.slice(2)

// One handler per kind of side effect: how to perform it and how to ask the target about it.
const charge: EffectHandler = {
  retrySafe: true, // the provider deduplicates by idempotency key
  timeoutMs: 10_000, // past this the outcome is `unknown`, never `failed`
  async dispatch({ idempotencyKey, request, signal }) {
    const response = await fetch(`${provider}/apply`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify(request),
      signal,
    })
    if (response.status === 422) throw effectRejected('the provider declined the charge')
    if (!response.ok) throw new Error(`provider answered ${response.status}`) // → unknown
    const { result } = (await response.json()) as { result: { receipt: string } }
    if (phase === 'crash') process.kill(process.pid, 'SIGKILL') // crash: applied, not yet recorded
    return result
  },
  async reconcile({ idempotencyKey }) {
    const response = await fetch(`${provider}/status/${encodeURIComponent(idempotencyKey)}`)
    const body = (await response.json()) as { status: string; result?: { receipt: string } }
    return body.status === 'confirmed'
      ? { status: 'confirmed', result: body.result ?? null }
      : { status: 'absent' }
  },
}

async function invoiceFlow(run: Run) {
  if (run.position.seq === 0) {
    // The approval is recorded as the step's accepted output, and re-checked at every resume.
    await run.commitStep(
      'approve',
      { approval: { by: 'alice', amount: 120, expiresAt: '2999-01-01T00:00:00Z' } },
      { next: 'charge' },
    )
  }
  if (run.position.step === 'charge') {
    const receipt = await run.effect('charge', 'charge-invoice-42', { amount: 120 })
    await run.commitStep('charge', { receipt }, { next: null })
  }
  await run.complete()
}

const backend = await openBackend(url)
try {
  // Opening takes the run's lease, starts a new attempt and, on resume, reconciles every
  // incomplete effect and runs the revalidation checks before anything is dispatched.
  const open = () =>
    openRun(backend, runId, {
      handlers: { charge },
      // Short for the example (a resume waits it out after the crash), yet long enough for one whole
      // attempt on a loaded machine; use minutes in production and call run.heartbeat().
      leaseTtlMs: 5000,
      revalidate: [
        {
          name: 'approval-still-valid',
          check: ({ lastStep }) => {
            const approval = (lastStep?.outputs as { approval?: { expiresAt: string } } | null)
              ?.approval
            if (lastStep === null || lastStep.step !== 'approve') return true
            return approval !== undefined && Date.parse(approval.expiresAt) > Date.now()
              ? true
              : 'the approval expired'
          },
        },
      ],
    })
  let run: Run | undefined
  while (run === undefined) {
    try {
      run = await open()
    } catch (error) {
      // The crashed owner's lease is still live: wait until it expires, then take over.
      if (!isAgentStateError(error, 'RUN_OWNED')) throw error
      const wait = Number(error.context.expiresAt) - Date.now()
      await new Promise((resolve) => setTimeout(resolve, Math.max(50, wait + 50)))
    }
  }
  await invoiceFlow(run)
  const decisions = run.audit.filter((entry) => entry.event === 'effect_reconciled')
  console.log(
    JSON.stringify({
      attempt: run.attempt.attemptId,
      attempts: run.attemptCount,
      decisions: decisions.map((entry) => entry.detail),
    }),
  )
} finally {
  await backend.close()
}
