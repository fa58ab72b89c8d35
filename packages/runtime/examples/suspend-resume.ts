/**
 * Suspend a worker in one process, resume it in another.
 *
 *   node --conditions=@agent-state/source --import tsx examples/suspend-resume.ts suspend sqlite:./state.db
 *   node --conditions=@agent-state/source --import tsx examples/suspend-resume.ts resume sqlite:./state.db <workerId>
 *
 * The first run prints the Suspension as JSON; the second prints the resumed
 * worker's state, the continuity reminder and the result.
 */
import { openBackend } from '@agent-state/core'
import { resumeWorker, startWorker } from '@agent-state/runtime'

const [command, url = 'file:./.agent-state', workerId] = process.argv.slice(2)
const backend = await openBackend(url)
try {
  if (command === 'suspend') {
    const worker = await startWorker(backend, {
      state: { step: 'research', findings: 3 },
      transcript: [{ role: 'assistant', content: 'I found three candidate fixes.' }],
    })
    // ... the agent loop runs turns, checkpointing at each boundary ...
    await worker.checkpoint({ iterations: 1 })
    const suspension = await worker.suspend(
      {
        reason: 'waiting for a human to pick a fix',
        initiator: 'self',
        conditions: { onEvent: 'fix-chosen', timeout: { durationMinutes: 60 } },
      },
      { summary: 'Three candidate fixes found; waiting for a choice.' },
    )
    console.log(JSON.stringify(suspension))
  } else if (command === 'resume' && workerId !== undefined) {
    const worker = await resumeWorker(backend, workerId, {
      input: { chosenFix: 2 },
      cause: 'fix-chosen event',
    })
    const reminder = worker.takeResumeReminder()
    await worker.complete(
      { applied: (worker.resumeInput as { chosenFix: number }).chosenFix },
      { iterations: 1 },
    )
    console.log(
      JSON.stringify({ state: worker.state, reminder: reminder?.text, status: worker.status }),
    )
  } else {
    throw new Error('usage: suspend-resume.ts suspend <url> | resume <url> <workerId>')
  }
} finally {
  await backend.close()
}
