export {
  type CronTriggerConfig,
  cronTriggerConfigSchema,
  nextCronOccurrence,
} from './cron-trigger.js'
export {
  type DaemonPathWatch,
  type WatchDaemonPathsOptions,
  watchDaemonPaths,
  watchDaemonPathsOptionsSchema,
} from './daemon-path-watch.js'
export {
  type DaemonWakeEvent,
  type DaemonWakeResult,
  type DaemonWakes,
  daemonWakesSchema,
  handleDaemonWake,
  readDaemonWakes,
} from './daemon-wakes.js'
export {
  assertEventTopic,
  EVENT_ID_PATTERN,
  getEvent,
  MAX_EVENT_PAYLOAD_BYTES,
  type PublishEventOptions,
  type PublishedEvent,
  publishEvent,
  type TopicEvent,
  topicEventSchema,
} from './event-topics.js'
export {
  BUILT_IN_TRIGGER_PROVIDERS,
  registerTriggerProvider,
  TRIGGER_PROVIDER_NAME,
  type TriggerProvider,
} from './trigger-providers.js'
export {
  type FiredWake,
  type SweepRound,
  startWakeDispatcher,
  type TickReport,
  type WakeDispatcher,
  type WakeDispatcherOptions,
  type WakeHandler,
  type WakeOutcome,
  wakeDispatcherOptionsSchema,
} from './wake-dispatcher.js'
export {
  MAX_WAKE_DUE_AT,
  MAX_WAKE_PAYLOAD_BYTES,
  WAKE_CAUSES,
  WAKE_ID_PATTERN,
  WAKE_STATES,
  type WakeCause,
  type WakeDelivery,
  type WakeFailure,
  type WakeFiring,
  type WakeRecord,
  type WakeState,
  type WakeTarget,
  wakeFailureSchema,
  wakeRecordSchema,
  wakeTargetSchema,
} from './wake-records.js'
export {
  type CancelWakeOptions,
  cancelWake,
  cancelWakeOptionsSchema,
  getWake,
  type RegisterWakeOptions,
  registerWake,
  registerWakeOptionsSchema,
} from './wake-registry.js'
export {
  type SweepWakeRegistrationsOptions,
  type SweepWakeRegistrationsResult,
  sweepWakeRegistrations,
  sweepWakeRegistrationsOptionsSchema,
} from './wake-sweep.js'
export {
  WEBHOOK_ANSWER_CODES,
  WEBHOOK_PATH_PREFIX,
  type WebhookAnswerCode,
  type WebhookEndpointOptions,
  webhookEndpointOptionsSchema,
  webhookTriggerUrl,
} from './webhook-endpoint.js'
export {
  createWebhookTrigger,
  hashWebhookSecret,
  type NewWebhookTrigger,
  readWebhookTrigger,
  type WebhookTriggerConfig,
  type WebhookTriggerRecord,
  webhookTriggerConfigSchema,
  webhookTriggerRecordSchema,
} from './webhook-trigger.js'
export {
  handleWorkerWake,
  type WorkerResumedHandler,
  type WorkerWakeOptions,
  type WorkerWakeResult,
  workerWakeOptionsSchema,
} from './worker-wake-handler.js'
export {
  nextWorkerWake,
  RESUME_TRIGGER_PATTERN,
  readWorkerWakes,
  type WorkerNextWake,
  type WorkerWakes,
  workerWakesSchema,
} from './worker-wakes.js'
