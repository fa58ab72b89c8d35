export { AgentStateSaver, createCheckpointSaver } from './checkpoint-saver.js'
export {
  type CheckpointKeys,
  decodeSegment,
  encodeSegment,
  invertId,
  KeyLayout,
  revertId,
} from './key-layout.js'
export {
  type CheckpointSaverOptions,
  checkpointSaverOptionsSchema,
  type OwnershipOptions,
  ownershipOptionsSchema,
  type ResolvedCheckpointSaverOptions,
} from './options.js'
export type { PruneResult } from './retention.js'
