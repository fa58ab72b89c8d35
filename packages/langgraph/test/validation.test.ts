import type { Backend } from '@agent-state/core'
import {
  type CheckpointSaverTestInitializer,
  validate,
} from '@langchain/langgraph-checkpoint-validation'
import { type AgentStateSaver, createCheckpointSaver } from '../src/index.js'
import { BACKENDS, type BackendFixture } from './backends.js'

/**
 * LangGraph's own conformance suite, once per backend, registered through the
 * package's `validate(initializer)` as its README describes for an existing
 * vitest suite. Every checkpointer gets a fresh key prefix on one shared
 * backend instance, so no instance sees another's state.
 */
let counter = 0
for (const factory of BACKENDS) {
  let fixture: BackendFixture | undefined
  let backend: Backend | undefined
  const initializer: CheckpointSaverTestInitializer<AgentStateSaver> = {
    checkpointerName: `@agent-state/langgraph on ${factory.name}`,
    beforeAllTimeout: 120_000,
    beforeAll() {
      fixture = factory.setup()
      backend = fixture.create()
    },
    async afterAll() {
      await fixture?.cleanup()
    },
    createCheckpointer() {
      if (backend === undefined) throw new Error('the backend fixture was not set up')
      return createCheckpointSaver({ backend, prefix: `lg-${++counter}` })
    },
  }
  validate(initializer)
}
