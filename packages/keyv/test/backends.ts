import { backendTargets } from '@agent-state/backend-targets'

export { describeEachBackend, sharedBackend } from '@agent-state/backend-targets'

/** Every backend, under keyv's names (`keyv-…` namespaces, `agent-state-keyv-…` temp dirs). */
export const BACKENDS = backendTargets({ label: 'keyv' })
