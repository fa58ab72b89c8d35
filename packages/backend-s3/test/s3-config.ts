import { randomBytes } from 'node:crypto'
import type { Backend, Clock } from '@agent-state/core'
import { inject } from 'vitest'
import { createS3Backend, type S3BackendOptions } from '../src/index.js'

/** Connection settings of the RGW started by the global setup. */
export interface S3TestConfig {
  readonly endpoint: string
  readonly region: string
  readonly forcePathStyle: true
  readonly bucket: string
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string }
}

declare module 'vitest' {
  export interface ProvidedContext {
    s3: S3TestConfig
  }
}

/** The RGW settings; throws (fails the test) when the global setup provided none. */
export function s3Config(): S3TestConfig {
  const config = inject('s3')
  if (config === undefined) throw new Error('the RGW global setup did not run')
  return config
}

/** A fresh namespace name for one test. */
export function freshNamespace(label = 't'): string {
  return `${label}-${randomBytes(6).toString('hex')}`
}

/** A backend on the test RGW. */
export function openTestBackend(
  namespace: string,
  extra: Partial<S3BackendOptions> & { clock?: Clock } = {},
): Backend {
  return createS3Backend({ ...s3Config(), namespace, ...extra })
}
