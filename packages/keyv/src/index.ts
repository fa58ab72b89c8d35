export { createKeyLayout, type KeyLayout } from './key-layout.js'
export { AgentStateKeyvStore, createKeyvStore, type KeyvEntryInput } from './keyv-store.js'
export {
  type KeyvStoreOptions,
  keyvStoreOptionsSchema,
  type ResolvedKeyvStoreOptions,
} from './options.js'
export { decodeEnvelope, type Envelope, encodeEnvelope } from './value-envelope.js'
