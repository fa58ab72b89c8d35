// The one helper every package's tests use to read a rejection's code (see @agent-state/contract).
export { errorCodeOf as codeOf } from '@agent-state/contract'
