export {
  CATEGORIES,
  type Category,
  type ContractCheck,
  notApplicable,
  notClaimed,
  skipCauseOf,
} from './check.js'
export { CONTRACT_CHECKS } from './checks/all.js'
export { MIN_CRASH_CYCLES } from './checks/crash.js'
export { MIN_FROZEN_ROUNDS } from './checks/frozen-writer.js'
export type { FrozenWoke } from './child-protocol.js'
export { crashCyclesKnob } from './crash-cycle-knob.js'
export {
  type ContractCheckOutcome,
  describeBackendContract,
  lastSummaries,
  runContractCheck,
  runContractCheckOutcome,
  skipReason,
} from './describe-contract.js'
export {
  describeRecordStoreContract,
  runRecordStoreCheck,
} from './describe-record-store-contract.js'
export { errorCodeOf } from './error-code-of.js'
export { createHarness, type Harness, probeCapabilities } from './harness.js'
export { DEFAULT_SCALE, DEFAULT_SEED } from './knobs.js'
export {
  type CasInput,
  type CasOutput,
  casRegisterModel,
  checkLinearizability,
  type HistoryOp,
  type LinearizabilityOptions,
  type LinearizabilityResult,
  type SequentialModel,
} from './linearizability.js'
export {
  messageQuotingProblems,
  UNSAFE_MESSAGE_HOLDER,
  UNSAFE_MESSAGE_KEY,
} from './message-quoting.js'
export { RECORD_STORE_CHECKS, type RecordStoreCheck } from './record-store-checks.js'
export type {
  RecordStoreContext,
  RecordStoreContractOptions,
  RecordStoreHarness,
  RecordStoreMethod,
} from './record-store-harness.js'
export { formatSummary, SummaryRecorder, writeSummary } from './summary.js'
export type {
  CategorySummary,
  CheckResult,
  CheckScale,
  CheckStatus,
  ConformanceSummary,
  ContractContext,
  ContractOptions,
  ContractProcessOptions,
  ContractReportOptions,
  ContractScale,
  FrozenWriterLimitation,
  SkipCause,
  WatchInterrupt,
} from './types.js'
