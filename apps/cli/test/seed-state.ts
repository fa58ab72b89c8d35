/**
 * Writes a small, known agent state into the backend a URL names: two
 * sessions (one with a handoff), a running and a suspended worker, a plain key
 * with a control character and a writer, a key under a live lease, and a
 * corrupt worker snapshot. Run as a child process:
 *   node --conditions=@agent-state/source --import tsx test/seed-state.ts <url>
 */
import { openBackend } from '@agent-state/core'
import { openSession, startWorker } from '@agent-state/runtime'
import { importBackendPackage } from '../src/backend-importer.js'

const url = process.argv[2]
if (url === undefined) throw new Error('usage: seed-state.ts <url>')
const backend = await openBackend(url, { importer: importBackendPackage })
const text = (s: string) => new TextEncoder().encode(s)
const review = await openSession(backend, { sessionId: 'review-42', writer: 'triage' })
await review.write('plan.md', '# Plan\n')
await review.handoff({ status: 'needs_review', next_stage: 'implement' })
await openSession(backend, { sessionId: 'empty-1', writer: 'triage' })
const running = await startWorker(backend, {
  workerId: 'w1',
  holder: 'host-a:1',
  state: { step: 1 },
})
await running.checkpoint({ iterations: 1 })
const parked = await startWorker(backend, { workerId: 'w2', state: { step: 1 } })
await parked.suspend({ reason: 'waiting for a human', initiator: 'self' })
await backend.put('workers/w3/snapshot.json', text('{"not":"a snapshot"}'))
await backend.put('plain/a b ✓', text('check'), { writer: { writerId: 'me', stageId: 's1' } })
await backend.put('plain/leased', text('in use'), { writer: { writerId: 'me' } })
await backend.acquireLease('plain/leased', { holder: 'someone', ttlMs: 600_000 })
await backend.put(
  'bin/all-bytes',
  Uint8Array.from({ length: 256 }, (_, i) => i),
)
await backend.close()
