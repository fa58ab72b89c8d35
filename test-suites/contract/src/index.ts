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
export {
  describeBackendContract,
  lastSummaries,
  runContractCheck,
  skipReason,
} from './describe-contract.js'
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
  SkipCause,
} from './types.js'
