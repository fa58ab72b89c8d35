import { AgentStateError, type Backend, type BackendUrlOptions, redactUrl } from '@agent-state/core'
import type { S3BackendOptions } from './options.js'
import { createS3Backend } from './s3-backend.js'

/** Options of {@link createBackendFromUrl}: core's URL options plus any S3 option not in the URL. */
export type S3UrlOptions = BackendUrlOptions &
  Partial<Omit<S3BackendOptions, 'bucket' | 'prefix' | 'namespace' | 'clock'>>

const QUERY_FIELDS = new Set(['endpoint', 'region', 'forcePathStyle', 'createBucket'])

function invalid(url: string, problem: string): AgentStateError {
  return new AgentStateError('INVALID_ARGUMENT', `Invalid S3 backend URL: ${problem}`, {
    context: { url: redactUrl(url) },
  })
}

function parseBoolean(url: string, name: string, value: string): boolean {
  if (value === 'true' || value === '1') return true
  if (value === 'false' || value === '0') return false
  throw invalid(url, `${name} must be true or false`)
}

/**
 * Opens the S3 backend from `s3://bucket/prefix?endpoint=…&region=…&forcePathStyle=…&createBucket=…`.
 * Credentials never go in the URL: pass `credentials` in `options` or use the
 * AWS SDK's default chain (environment, shared config, instance roles).
 */
export function createBackendFromUrl(url: string, options: S3UrlOptions = {}): Backend {
  if (typeof url !== 'string' || !/^s3:\/\//i.test(url)) {
    throw invalid(String(url), 'expected s3://bucket/prefix')
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw invalid(url, 'not a URL')
  }
  if (parsed.username !== '' || parsed.password !== '') {
    throw invalid(url, 'credentials do not belong in the URL; pass them as options')
  }
  if (parsed.hostname === '') throw invalid(url, 'the bucket is missing')
  for (const name of parsed.searchParams.keys()) {
    if (!QUERY_FIELDS.has(name)) throw invalid(url, `unknown parameter ${JSON.stringify(name)}`)
  }
  const query = parsed.searchParams
  const prefix = decodeURIComponent(parsed.pathname.replace(/^\/+/, ''))
  const backendOptions: { -readonly [K in keyof S3BackendOptions]: S3BackendOptions[K] } = {
    ...options,
    bucket: decodeURIComponent(parsed.hostname),
  }
  if (prefix !== '') backendOptions.prefix = prefix
  const endpoint = query.get('endpoint')
  if (endpoint !== null) backendOptions.endpoint = endpoint
  const region = query.get('region')
  if (region !== null) backendOptions.region = region
  const pathStyle = query.get('forcePathStyle')
  if (pathStyle !== null)
    backendOptions.forcePathStyle = parseBoolean(url, 'forcePathStyle', pathStyle)
  const createBucket = query.get('createBucket')
  if (createBucket !== null) {
    backendOptions.createBucket = parseBoolean(url, 'createBucket', createBucket)
  }
  return createS3Backend(backendOptions)
}
