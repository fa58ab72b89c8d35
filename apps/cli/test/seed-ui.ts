/**
 * Writes what the `ui` tests look at beyond test/seed-state.ts and test/seed-runs.ts, through
 * the runtime, and exits:
 *
 * - `seed`: worker `stale` running with a lease that has expired (a crashed process's; the
 *   script waits out its 1 s TTL), daemon `full` at its capacity of 2, run `recon` with
 *   effect `e-lost` unknown (its dispatch timed out) and the run closed, and the hostile keys
 *   and values of {@link HOSTILE} (markup, bidi overrides, C1 and C0 controls), and 150 keys
 *   `many/k-000` … `many/k-149` (a page and a half of the key browser); run `steps` with
 *   {@link STEP_RUN_STEPS} committed steps (more than a page of the run's view) and no effect,
 *   step 3's outputs hostile, the last one's over the page's 4 KiB cut, the run left open;
 * - `ops`: run `ops` with effects `e-a` and `e-b` unknown (dispatches that timed out), the
 *   run closed: for the page's operator actions to resolve.
 *
 *   node --conditions=@agent-state/source --import tsx test/seed-ui.ts <url> seed|ops
 */
import { openBackend } from '@agent-state/core'
import { openRun, spawnDaemon, startWorker } from '@agent-state/runtime'
import { importBackendPackage } from '../src/backend-importer.js'
import { HOSTILE, STEP_RUN_STEPS, stepRunOutputs } from './ui-hostile.js'

const [url, mode] = process.argv.slice(2)
if (url === undefined || (mode !== 'seed' && mode !== 'ops'))
  throw new Error('usage: seed-ui.ts <url> seed|ops')
const backend = await openBackend(url, { importer: importBackendPackage })
const text = (s: string) => new TextEncoder().encode(s)

const lost = {
  retrySafe: false,
  timeoutMs: 50,
  reconcile: async () => ({ status: 'unknown' as const }),
  dispatch: () => new Promise<never>(() => undefined),
}
if (mode === 'ops') {
  const run = await openRun(backend, 'ops', { handlers: { pay: lost } })
  for (const id of ['e-a', 'e-b']) await run.effect('pay', id, { id }).catch(() => undefined)
  await run.close()
} else {
  await startWorker(backend, {
    workerId: 'stale',
    holder: 'gone:1',
    leaseTtlMs: 1000,
    state: { step: 1 },
  })
  const full = await spawnDaemon(backend, { daemonId: 'full', capacity: 2, holder: 'seed' })
  await full.trigger({ n: 1 })
  await full.trigger({ n: 2 })
  const run = await openRun(backend, 'recon', { handlers: { pay: lost } })
  await run.effect('pay', 'e-lost', { amount: 5 }).catch(() => undefined)
  await run.close()
  const steps = await openRun(backend, 'steps', { handlers: {} })
  for (let seq = 1; seq <= STEP_RUN_STEPS; seq++)
    await steps.commitStep(`step-${seq}`, stepRunOutputs(seq), {
      next: seq < STEP_RUN_STEPS ? `step-${seq + 1}` : null,
    })
  await steps.close()
  for (const key of HOSTILE.keys) await backend.put(key, text('hostile key'))
  await backend.put(HOSTILE.htmlValue.key, text(HOSTILE.htmlValue.value), {
    writer: { writerId: HOSTILE.writer },
  })
  await backend.put(HOSTILE.jsonValue.key, text(HOSTILE.jsonValue.value))
  // More keys than one page of the key browser (100).
  for (let i = 0; i < 150; i++)
    await backend.put(`many/k-${String(i).padStart(3, '0')}`, text(`${i}`))
  await backend.put(HOSTILE.bigValue.key, new Uint8Array(HOSTILE.bigValue.size).fill(0x61))
  // The stale worker's lease outlives nothing: wait until it has expired.
  await new Promise((resolve) => setTimeout(resolve, 1500))
}
await backend.close()
process.exit(0)
