/**
 * Writes daemons and effect-ledger runs into the backend a URL names, and
 * ends the way a crashed agent does (process.exit in the middle of an effect):
 *
 * - daemon `inbox` (capacity 8): 4 events, one acknowledged, the next in
 *   flight (holder `seed`, 10 min visibility), two pending;
 * - run `ledger`: effects `e-ok` confirmed, `e-no` failed, `e-unknown`
 *   unknown (its dispatch timed out), `e-crash` submitted (the process exits
 *   inside its dispatch); one committed step, next `charge`;
 * - `daemons/broken/daemon.json` and `runs/bad/run.json`: not records.
 *
 *   node --conditions=@agent-state/source --import tsx test/seed-runs.ts <url>
 */
import { openBackend } from '@agent-state/core'
import { effectRejected, openRun, spawnDaemon } from '@agent-state/runtime'
import { importBackendPackage } from '../src/backend-importer.js'

const url = process.argv[2]
if (url === undefined) throw new Error('usage: seed-runs.ts <url>')
const backend = await openBackend(url, { importer: importBackendPackage })
const text = (s: string) => new TextEncoder().encode(s)

const inbox = await spawnDaemon(backend, {
  daemonId: 'inbox',
  capacity: 8,
  holder: 'seed',
  visibilityTimeoutMs: 600_000,
})
for (const n of [1, 2, 3, 4]) await inbox.trigger({ n })
const first = await inbox.next()
if (first === null) throw new Error('no event')
await inbox.ack(first)
await inbox.next()

const run = await openRun(backend, 'ledger', {
  handlers: {
    pay: {
      retrySafe: false,
      timeoutMs: 50,
      reconcile: async () => ({ status: 'unknown' }),
      dispatch: async ({ request }) => {
        const { outcome } = request as { outcome: string }
        if (outcome === 'ok') return { paid: true }
        if (outcome === 'no') throw effectRejected('declined')
        if (outcome === 'crash') process.exit(0)
        return new Promise(() => undefined) // never answers: the timeout makes it unknown
      },
    },
  },
})
await run.commitStep('approve', { ok: true }, { next: 'charge' })
await run.effect('pay', 'e-ok', { outcome: 'ok' })
await run.effect('pay', 'e-no', { outcome: 'no' }).catch(() => undefined)
await run.effect('pay', 'e-unknown', { outcome: 'hang' }).catch(() => undefined)
await backend.put('daemons/broken/daemon.json', text('not json'))
await backend.put('runs/bad/run.json', text('not json'))
await run.effect('pay', 'e-crash', { outcome: 'crash' })
throw new Error('the crash effect returned')
