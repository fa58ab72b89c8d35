import type { ContractCheck } from '../check.js'
import { changeNotificationChecks } from './change-notification.js'
import { crashChecks } from './crash.js'
import { frozenWriterChecks } from './frozen-writer.js'
import { IN_PROCESS_CHECKS } from './index.js'
import { multiProcessChecks } from './multi-process.js'

/** Every check of the contract, in report order. */
export const CONTRACT_CHECKS: readonly ContractCheck[] = [
  ...IN_PROCESS_CHECKS,
  ...multiProcessChecks,
  ...frozenWriterChecks,
  ...crashChecks,
  ...changeNotificationChecks,
]
