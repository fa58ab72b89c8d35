export { createBackendFromUrl, type S3UrlOptions } from './from-url.js'
export {
  type ResolvedS3Options,
  type S3BackendOptions,
  type S3Credentials,
  s3CredentialsSchema,
  s3OptionsSchema,
} from './options.js'
export { type ProbeResult, probeConditionalWrites } from './probe.js'
export { createS3Backend } from './s3-backend.js'
export { createS3RecordStore, type S3RecordStoreConfig } from './s3-record-store.js'
