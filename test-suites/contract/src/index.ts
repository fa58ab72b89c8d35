export {
  CATEGORIES,
  type Category,
  type ContractCheck,
} from './check.js'
export { CONTRACT_CHECKS } from './checks/all.js'
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
  CheckStatus,
  ConformanceSummary,
  ContractContext,
  ContractOptions,
  ContractProcessOptions,
  ContractReportOptions,
  ContractScale,
} from './types.js'
