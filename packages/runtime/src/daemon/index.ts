export {
  Daemon,
  type NextOptions,
  nextOptionsSchema,
  type ResumeDaemonOptions,
  resumeDaemon,
  type SpawnDaemonOptions,
  spawnDaemon,
} from './daemon.js'
export type { DaemonFields } from './daemon-fields.js'
export {
  createDaemonQueue,
  DaemonQueue,
  MAX_BATCH_BYTES,
  MAX_BATCH_EVENTS,
  openDaemonQueue,
  type ProducerStats,
  type QueueCounts,
} from './daemon-queue.js'
export {
  DAEMON_STATES,
  type DaemonSnapshot,
  type DaemonSnapshotOptions,
  type DaemonState,
  daemonSnapshot,
  type InflightEvent,
} from './daemon-snapshot.js'
export {
  DEFAULT_VISIBILITY_TIMEOUT_MS,
  Delivery,
  type DeliveryOptions,
  deliveryOptionsSchema,
} from './delivery.js'
export {
  type DaemonQueueOptions,
  DEFAULT_MAX_EVENT_BYTES,
  DEFAULT_QUEUE_CAPACITY,
  daemonQueueOptionsSchema,
  type EventRecord,
  MAX_EVENT_BYTES_LIMIT,
  MAX_QUEUE_CAPACITY,
  type QueueConfig,
} from './queue-records.js'
export {
  type WaitForIdleOptions,
  waitForIdle,
  waitForIdleOptionsSchema,
} from './wait-idle.js'
