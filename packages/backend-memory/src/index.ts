export { createBackendFromUrl } from './from-url.js'
export { createMemoryBackend } from './memory-backend.js'
export {
  createMemoryRecordMap,
  createMemoryRecordStore,
  type MemoryRecordMap,
  type MemoryRecordStoreOptions,
} from './memory-record-store.js'
export { createMemoryStore, type MemoryNamespace, type MemoryStore } from './memory-store.js'
export {
  type MemoryBackendOptions,
  memoryOptionsSchema,
  type ResolvedMemoryOptions,
} from './options.js'
