import { backendTargets } from '@agent-state/backend-targets'

export { describeEachBackend, sharedBackend } from '@agent-state/backend-targets'

/** Every backend, under langgraph's names (`langgraph-…` namespaces, `agent-state-langgraph-…` temp dirs). */
export const BACKENDS = backendTargets({ label: 'langgraph' })
