import {
  type Backend,
  type BackendUrlOptions,
  invalidBackendUrl,
  readUrlQuery,
} from '@agent-state/core'
import type { S3BackendOptions } from './options.js'
import { createS3Backend } from './s3-backend.js'

/** Options of {@link createBackendFromUrl}: core's URL options plus any S3 option not in the URL. */
export type S3UrlOptions = BackendUrlOptions &
  Partial<Omit<S3BackendOptions, 'bucket' | 'prefix' | 'namespace' | 'clock'>>

/**
 * Opens the S3 backend from `s3://bucket/prefix?endpoint=…&region=…&forcePathStyle=…&createBucket=…`.
 * Credentials never go in the URL: pass `credentials` in `options` or use the
 * AWS SDK's default chain (environment, shared config, instance roles).
 *
 * @throws `INVALID_ARGUMENT` (core's `invalidBackendUrl` shape, the URL
 *   redacted) for a URL that is not `s3://bucket…`, carries credentials, or has
 *   an unknown, repeated or malformed query parameter.
 */
export function createBackendFromUrl(url: string, options: S3UrlOptions = {}): Backend {
  if (typeof url !== 'string' || !/^s3:\/\//i.test(url)) {
    throw invalidBackendUrl('S3', String(url), 'expected s3://bucket/prefix')
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw invalidBackendUrl('S3', url, 'not a URL')
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw invalidBackendUrl('S3', url, 'credentials do not belong in the URL; pass them as options')
  }
  if (parsed.hostname === '') throw invalidBackendUrl('S3', url, 'the bucket is missing')
  const query = readUrlQuery('S3', url, parsed.searchParams, {
    endpoint: 'string',
    region: 'string',
    forcePathStyle: 'boolean',
    createBucket: 'boolean',
  })
  const prefix = decodeURIComponent(parsed.pathname.replace(/^\/+/, ''))
  return createS3Backend({
    ...options,
    bucket: decodeURIComponent(parsed.hostname),
    ...(prefix === '' ? {} : { prefix }),
    ...query,
  })
}
