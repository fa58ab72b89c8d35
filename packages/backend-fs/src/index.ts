// Frozen writers and damaged records (issues 17 and 21).
export type {
  DamagedRecordInfo,
  FsBackend,
  FsListEntry,
  FsListPage,
} from './damage-reporting.js'
export { createBackendFromUrl, rootFromFileUrl } from './from-url.js'
export { createFsBackend, createFsBackendWithHooks } from './fs-backend.js'
export { createFsRecordStore, type FsRecordStore } from './fs-record-store.js'
export { fileNameOf, MAX_HEX_KEY_BYTES } from './key-layout.js'
export { type FsLayout, layoutOf } from './namespace-dirs.js'
export { type FsBackendOptions, fsOptionsSchema, type ResolvedFsOptions } from './options.js'
export { FS_WRITE_STEPS, type WriteHooks, type WriteStep } from './write-path.js'
