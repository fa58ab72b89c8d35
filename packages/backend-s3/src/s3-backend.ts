import { randomUUID } from 'node:crypto'
import {
  AgentStateError,
  type Backend,
  createRecordBackend,
  MAX_KEY_BYTES,
  parseBackendOptions,
  RESERVED_SEGMENT_PREFIX,
  utf8ByteLength,
} from '@agent-state/core'
import {
  CreateBucketCommand,
  HeadBucketCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3'
import { sdkErrorCode, statusOf, toAgentStateError } from './errors.js'
import { createObjectNaming } from './key-layout.js'
import { type S3BackendOptions, s3OptionsSchema } from './options.js'
import { type ProbeResult, probeConditionalWrites } from './probe.js'
import { type ReadPolicy, runRead } from './read-requests.js'
import { createS3RecordStore } from './s3-record-store.js'

/**
 * Probe results per server and bucket, shared by the instances of this
 * process: a server either enforces preconditions or it does not. Failed
 * probes (server unreachable) are not kept.
 */
const probes = new Map<string, Promise<ProbeResult>>()

type StaticCredentials = Extract<
  NonNullable<S3ClientConfig['credentials']>,
  { accessKeyId: string }
>

/**
 * Creates the S3 backend: every key is one object holding the key's whole
 * state (value, writer, lease, fencing counter, deleted flag), written only
 * by conditional PutObject, so compare-and-set, create-only, leases and fenced
 * writes are each one atomic request on the server. Durable, safe across
 * processes and hosts; leases use the `host` clock (see the README).
 *
 * At the first write the backend probes (on a key in the namespace's
 * reserved area) that the server really enforces `If-None-Match: *` and
 * `If-Match`; if not, every write and lease operation throws `UNSUPPORTED`
 * naming the failing behaviour.
 *
 * @example
 * ```ts
 * const backend = createS3Backend({ bucket: 'agents', endpoint: 'http://127.0.0.1:7480', forcePathStyle: true })
 * await backend.put('notes/today', new TextEncoder().encode('hello'))
 * ```
 */
export function createS3Backend(options: S3BackendOptions): Backend {
  const resolved = parseBackendOptions(s3OptionsSchema, options, 'S3')
  const rawPrefix = resolved.prefix ?? ''
  const prefix = rawPrefix === '' || rawPrefix.endsWith('/') ? rawPrefix : `${rawPrefix}/`
  const { namespace, bucket, requestTimeoutMs } = resolved
  const base = `${prefix}${namespace}/`
  // Keys longer than the room S3 leaves after the base get a shortened object name.
  const naming = createObjectNaming(resolved.maxObjectKeyBytes - utf8ByteLength(base))
  if (naming === undefined) {
    const problem =
      'the prefix and namespace leave too little of maxObjectKeyBytes for object names'
    // The shape of core's parseBackendOptions, for a rule no single field's schema can state.
    throw new AgentStateError('INVALID_ARGUMENT', `Invalid S3 backend option prefix: ${problem}`, {
      context: { backend: 'S3', field: 'prefix', issues: [{ field: 'prefix', message: problem }] },
    })
  }
  const reads = { attempts: resolved.readAttempts, timeoutMs: requestTimeoutMs }
  // zod types an absent optional as `undefined`; the SDK (exactOptionalPropertyTypes) wants it absent.
  const { sessionToken, ...given } = resolved.credentials ?? {}
  const credentials =
    resolved.credentials === undefined
      ? undefined
      : ({ ...given, ...(sessionToken === undefined ? {} : { sessionToken }) } as StaticCredentials)
  const clientConfig = {
    region: resolved.region,
    forcePathStyle: resolved.forcePathStyle,
    // Default checksums add aws-chunked trailers that RGW and older servers refuse.
    requestChecksumCalculation: 'WHEN_REQUIRED' as const,
    responseChecksumValidation: 'WHEN_REQUIRED' as const,
    requestHandler: {
      // Belt and braces: every request also runs under withinDeadline, which covers the body.
      requestTimeout: requestTimeoutMs,
      // Without it the SDK only logs a warning and the request waits forever.
      throwOnRequestTimeout: true,
      connectionTimeout: resolved.connectTimeoutMs,
    },
    ...(resolved.endpoint === undefined ? {} : { endpoint: resolved.endpoint }),
    ...(credentials === undefined ? {} : { credentials }),
  }
  // Reads are retried by runRead, each attempt under a deadline that covers the body.
  const reader = new S3Client({ ...clientConfig, maxAttempts: 1 })
  // One attempt: the SDK's retries (and its retry quota) would blur conditional outcomes.
  const writer = new S3Client({ ...clientConfig, maxAttempts: 1 })

  let prepared: Promise<void> | undefined
  const prepare = (): Promise<void> => {
    if (!resolved.createBucket) return Promise.resolve()
    prepared ??= ensureBucket(reader, bucket, reads).catch((error: unknown) => {
      prepared = undefined
      throw error
    })
    return prepared
  }

  const probeKey = `${resolved.endpoint ?? `aws:${clientConfig.region}`}|${bucket}`
  const probe = (): Promise<ProbeResult> => {
    let result = probes.get(probeKey)
    if (result === undefined) {
      result = probeConditionalWrites(
        writer,
        bucket,
        `${base}${RESERVED_SEGMENT_PREFIX}probe/${randomUUID()}`,
        requestTimeoutMs,
      )
      probes.set(probeKey, result)
      result.catch(() => probes.delete(probeKey))
    }
    return result
  }

  const store = createS3RecordStore({
    reader,
    writer,
    bucket,
    base,
    naming,
    capabilities: {
      durable: true,
      multiProcess: true,
      multiHost: true,
      maxKeyBytes: MAX_KEY_BYTES,
      maxValueBytes: resolved.maxValueBytes,
    },
    writeAttempts: resolved.writeAttempts,
    requestTimeoutMs,
    reads,
    listConcurrency: resolved.listConcurrency,
    probe,
    prepare,
  })
  return createRecordBackend(store, resolved.clock === undefined ? {} : { clock: resolved.clock })
}

async function ensureBucket(client: S3Client, bucket: string, reads: ReadPolicy): Promise<void> {
  try {
    await runRead(reads, (abortSignal) =>
      client.send(new HeadBucketCommand({ Bucket: bucket }), { abortSignal }),
    )
    return
  } catch (error) {
    if (statusOf(error) !== 404) throw toAgentStateError(error, 'Checking the bucket')
  }
  try {
    await runRead(reads, (abortSignal) =>
      client.send(new CreateBucketCommand({ Bucket: bucket }), { abortSignal }),
    )
  } catch (error) {
    const code = sdkErrorCode(error)
    if (code !== 'BucketAlreadyOwnedByYou' && code !== 'BucketAlreadyExists') {
      throw toAgentStateError(error, 'Creating the bucket')
    }
  }
}
