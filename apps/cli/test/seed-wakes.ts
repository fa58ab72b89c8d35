/**
 * Writes wakes into the backend a URL names, on a fixed clock so the rows are known:
 *
 * - a timeout for worker `parked`, due at 2030-01-01T00:00:00Z: pending;
 * - an interval for daemon `inbox`, due at 2020-01-01T00:00:00Z: pending and overdue;
 * - an event for worker `woken`, due at 2020-01-01T00:00:01Z, fired by dispatcher `disp-1`
 *   2.5 s after its due time and delivered;
 * - a webhook for daemon `hook`, due at 2020-01-01T00:00:02Z, given up by dispatcher `disp-2`
 *   (`maxAttempts: 1`) when its handler threw `EVENT_NOT_FOUND`: failed;
 * - a schedule for worker `gone`, due at 2030-01-01T00:00:01Z, cancelled with reason `worker closed`;
 * - `wakes/records/<a valid id>` holding bytes that are not a wake;
 * - worker `sleeper`, parked at 2019-12-31T23:59:00Z by the local runtime with a `cron` trigger
 *   `0 3 * * *` in UTC (a schedule wake due 2020-01-01T03:00:00Z, registered first), a 60-minute
 *   timeout (due 2020-01-01T00:59:00Z, the earliest) and `onEvent: 'fix-chosen'`.
 *
 *   node --conditions=@agent-state/source --import tsx test/seed-wakes.ts <url>
 */
import { AgentStateError, openBackend } from '@agent-state/core'
import { cancelWake, registerWake, startWakeDispatcher, startWorker } from '@agent-state/runtime'
import { importBackendPackage } from '../src/backend-importer.js'

const url = process.argv[2]
if (url === undefined) throw new Error('usage: seed-wakes.ts <url>')
const backend = await openBackend(url, { importer: importBackendPackage })
const PAST = Date.UTC(2020, 0, 1)
const FUTURE = Date.UTC(2030, 0, 1)
const clock = () => PAST - 60_000

await registerWake(backend, {
  target: { kind: 'worker', workerId: 'parked' },
  cause: 'timeout',
  dueAt: FUTURE,
  clock,
})
await registerWake(backend, {
  target: { kind: 'daemon', daemonId: 'inbox' },
  cause: 'interval',
  dueAt: PAST,
  clock,
})
await registerWake(backend, {
  target: { kind: 'worker', workerId: 'woken' },
  cause: 'event',
  dueAt: PAST + 1000,
  payload: { topic: 'fix-chosen' },
  clock,
})
const gone = await registerWake(backend, {
  target: { kind: 'worker', workerId: 'gone' },
  cause: 'schedule',
  dueAt: FUTURE + 1000,
  clock,
})
await cancelWake(backend, gone.id, { reason: 'worker closed', clock })

// Fires only the event wake: the interval has no handler here, so it stays pending.
const dispatcher = startWakeDispatcher(backend, {
  handlers: { event: async () => undefined },
  clock: () => PAST + 3500,
  dispatcherId: 'disp-1',
  intervalMs: null,
})
await dispatcher.tick()
await dispatcher.stop()

await registerWake(backend, {
  target: { kind: 'daemon', daemonId: 'hook' },
  cause: 'webhook',
  dueAt: PAST + 2000,
  clock,
})
// Only webhook wakes have a handler here, and it fails for good on the first attempt.
const givingUp = startWakeDispatcher(backend, {
  handlers: {
    webhook: async () => {
      throw new AgentStateError('EVENT_NOT_FOUND', 'the webhook body is gone')
    },
  },
  clock: () => PAST + 5000,
  dispatcherId: 'disp-2',
  intervalMs: null,
  maxAttempts: 1,
})
await givingUp.tick()
await givingUp.stop()

await backend.put(
  `wakes/records/${String(FUTURE + 2000).padStart(13, '0')}-${'0'.repeat(32)}`,
  new TextEncoder().encode('not a wake'),
)
const sleeper = await startWorker(backend, { workerId: 'sleeper', clock, holder: 'seed' })
await sleeper.suspend({
  reason: 'waits for a fix',
  conditions: {
    trigger: { provider: 'cron', config: { schedule: '0 3 * * *', timeZone: 'UTC' } },
    timeout: { durationMinutes: 60 },
    onEvent: 'fix-chosen',
  },
})
await backend.close()
