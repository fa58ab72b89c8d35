import {
  type CheckpointSaverTestInitializer,
  validate,
} from '@langchain/langgraph-checkpoint-validation'
import { type AgentStateSaver, createCheckpointSaver } from '../src/index.js'
import { BACKENDS, sharedBackend } from './backends.js'

/**
 * LangGraph's own conformance suite, once per backend, registered through the
 * package's `validate(initializer)` as its README describes for an existing
 * vitest suite. Every checkpointer gets a fresh key prefix on one shared
 * backend instance, so no instance sees another's state.
 */
let counter = 0
for (const factory of BACKENDS) {
  const shared = sharedBackend(factory)
  const initializer: CheckpointSaverTestInitializer<AgentStateSaver> = {
    checkpointerName: `@agent-state/langgraph on ${factory.name}`,
    beforeAllTimeout: 120_000,
    beforeAll: () => shared.open(),
    afterAll: () => shared.close(),
    createCheckpointer: () =>
      createCheckpointSaver({ backend: shared.backend(), prefix: `lg-${++counter}` }),
  }
  validate(initializer)
}
