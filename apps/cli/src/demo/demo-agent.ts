/**
 * The scripted agent of `agent-state demo`, one role per process:
 *
 *   demo-agent <url> <namespace> work    <workerId>   starts the worker, runs turns until killed
 *   demo-agent <url> <namespace> resume  <workerId>   takes over the dead worker, waits for "go", finishes
 *   demo-agent <url> <namespace> contend <workerId>   tries to resume the same worker at the same time
 *
 * Deterministic: no model, no network beyond the backend. Each process prints
 * one JSON line per event on stdout; the demo reads them to build its timeline.
 */
import { openBackend } from '@agent-state/core'
import { resumeWorker, startWorker } from '@agent-state/runtime'
import { importBackendPackage } from '../backend-importer.js'

/** The lease of the demo's worker: short, so a dead owner's lease runs out within the demo. */
const DEMO_LEASE_TTL_MS = 1500

const [url, namespace, role, workerId] = process.argv.slice(2)
if (url === undefined || namespace === undefined || role === undefined || workerId === undefined) {
  throw new Error('usage: demo-agent <url> <namespace> work|resume|contend <workerId>')
}
const say = (event: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ pid: process.pid, ...event })}\n`)
}
const backend = await openBackend(url, { namespace, importer: importBackendPackage })
const holder = `${role}:${process.pid}`

if (role === 'work') {
  const worker = await startWorker(backend, {
    workerId,
    holder,
    leaseTtlMs: DEMO_LEASE_TTL_MS,
    state: { turn: 0, notes: [] },
  })
  say({ event: 'started', token: worker.lease?.token })
  // Turns until the demo kills this process; each one checkpointed (a fenced write).
  for (let turn = 1; ; turn++) {
    const notes = [...((worker.state as { notes: string[] }).notes ?? []), `finding ${turn}`]
    await worker.checkpoint({ state: { turn, notes }, iterations: 1 })
    say({ event: 'checkpoint', turn })
    await new Promise((resolve) => setTimeout(resolve, 150))
  }
} else if (role === 'resume' || role === 'contend') {
  try {
    const worker = await resumeWorker(backend, workerId, {
      holder,
      leaseTtlMs: 60_000,
      recoverRunning: true,
      cause: role === 'resume' ? 'previous owner killed' : 'a second resumer',
    })
    const state = worker.state as { turn: number; notes: string[] }
    say({ event: 'resumed', token: worker.lease?.token, turn: state.turn })
    if (role === 'resume') {
      // Hold the worker until the demo has shown the contender being refused.
      await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()))
      await worker.complete(
        { summary: `${state.notes.length} findings`, resumedFromTurn: state.turn },
        { state: { ...state, turn: state.turn + 1 }, iterations: 1 },
      )
      say({ event: 'completed', turn: state.turn + 1 })
    }
  } catch (error) {
    const code = (error as { code?: unknown }).code
    say({
      event: 'refused',
      code: typeof code === 'string' ? code : 'UNKNOWN',
      message: (error as Error).message,
    })
  }
}
await backend.close()
process.exit(0)
