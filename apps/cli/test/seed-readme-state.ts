/**
 * The state the README's command examples talk about, for test/readme.test.ts:
 * in the first URL session `review-42` (plan.md and a handoff) and worker `w1`
 * (suspended, so no live lease); in the second URL, other ids (`ingest-7`, `w9`), so a copy of `sessions/` into it
 * creates keys instead of meeting newer ones. Run as a child process:
 *   node --conditions=@agent-state/source --import tsx test/seed-readme-state.ts <url> <url>
 */
import { openBackend } from '@agent-state/core'
import { openSession, startWorker } from '@agent-state/runtime'
import { importBackendPackage } from '../src/backend-importer.js'

const [main, other] = process.argv.slice(2)
if (main === undefined || other === undefined)
  throw new Error('usage: seed-readme-state.ts <url> <url>')

async function seed(url: string, sessionId: string, workerId: string): Promise<void> {
  const backend = await openBackend(url, { importer: importBackendPackage })
  const session = await openSession(backend, { sessionId, writer: 'triage' })
  await session.write('plan.md', '# Plan\n- inspect PR')
  await session.handoff({ status: 'needs_review', next_stage: 'implement' })
  const worker = await startWorker(backend, { workerId, state: { step: 1 } })
  await worker.checkpoint({ iterations: 1 })
  await worker.suspend({ reason: 'waiting for a human', initiator: 'self' })
  await backend.close()
}

await seed(main, 'review-42', 'w1')
await seed(other, 'ingest-7', 'w9')
