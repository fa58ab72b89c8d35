import { backendTargets } from '@agent-state/backend-targets'

export type { BackendFactory, BackendFixture } from '@agent-state/backend-targets'

/** Every backend, under runtime's names (`rt-…` namespaces, `agent-state-runtime-…` temp dirs). */
export const BACKENDS = backendTargets({ label: 'runtime', namePrefix: 'rt' })
