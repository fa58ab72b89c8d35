/**
 * A daemon fed by trigger events: spawn and stop it mid-turn in one process,
 * resume it in another, which replays the interrupted event first.
 *
 *   node --import tsx examples/daemon.ts spawn  sqlite:./state.db reviewer
 *   node --import tsx examples/daemon.ts resume sqlite:./state.db reviewer
 *
 * Each run prints one JSON line: what it saw and the daemon's snapshot.
 */
import { openBackend } from '@agent-state/core'
import { daemonSnapshot, resumeDaemon, spawnDaemon, waitForIdle } from '@agent-state/runtime'

const [command, url = 'file:./.agent-state', daemonId = 'reviewer'] = process.argv.slice(2)
const backend = await openBackend(url)
try {
  if (command === 'spawn') {
    const reviewer = await spawnDaemon(backend, {
      daemonId,
      state: { reviewed: [] },
      watchPaths: ['src/'],
      wakeIntervalMs: 30_000,
      capacity: 256, // the seed's event_queue_capacity; QUEUE_FULL beyond it
    })
    // Any process can trigger: openDaemonQueue(backend, daemonId).trigger(event).
    for (const path of ['src/lib.rs', 'src/main.rs', 'src/util.rs']) {
      await reviewer.trigger({ kind: 'file_changed', path })
    }
    const turn = await reviewer.next() // { seq: 0, attempt: 1, event: { ... } }
    // ... the daemon's turn is interrupted: stop re-queues the in-flight event at the head.
    await reviewer.stop('deploy')
    const snapshot = await daemonSnapshot(backend, daemonId)
    console.log(JSON.stringify({ interrupted: turn?.event, snapshot }))
  } else if (command === 'resume') {
    const reviewer = await resumeDaemon(backend, daemonId)
    const handled = []
    for (let turn = await reviewer.next(); turn !== null; turn = await reviewer.next()) {
      handled.push({ seq: turn.seq, attempt: turn.attempt, event: turn.event })
      const path = (turn.event as { path: string }).path
      const reviewed = [...(reviewer.state as { reviewed: string[] }).reviewed, path]
      await reviewer.ack(turn, { state: { reviewed } }) // fenced: LEASE_LOST if it went stale
    }
    const idle = await waitForIdle(backend, daemonId, { minIterations: 3 })
    console.log(JSON.stringify({ handled, snapshot: idle }))
  } else {
    throw new Error('usage: daemon.ts spawn|resume <backend-url> [daemonId]')
  }
} finally {
  await backend.close()
}
