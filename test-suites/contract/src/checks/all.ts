import type { ContractCheck } from '../check.js'
import { changeNotificationChecks } from './change-notification.js'
import { crashChecks } from './crash.js'
import { frozenWriterChecks } from './frozen-writer.js'
import { IN_PROCESS_CHECKS } from './index.js'
import { multiProcessChecks } from './multi-process.js'
import { processDeathChecks } from './process-death.js'

/** Every check of the contract, in report order. */
export const CONTRACT_CHECKS: readonly ContractCheck[] = [
  ...IN_PROCESS_CHECKS,
  ...processDeathChecks,
  ...multiProcessChecks,
  ...frozenWriterChecks,
  ...crashChecks,
  ...changeNotificationChecks,
]
