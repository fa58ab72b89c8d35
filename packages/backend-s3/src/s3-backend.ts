import { randomUUID } from 'node:crypto'
import {
  AgentStateError,
  type Backend,
  createRecordBackend,
  MAX_KEY_BYTES,
  RESERVED_SEGMENT_PREFIX,
  utf8ByteLength,
} from '@agent-state/core'
import { CreateBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { createObjectNaming } from './object-keys.js'
import { type S3BackendOptions, s3OptionsSchema } from './options.js'
import { type ProbeResult, probeConditionalWrites } from './probe.js'
import { type ReadPolicy, runRead } from './read-requests.js'
import { codeOf, statusOf, toAgentStateError } from './s3-errors.js'
import { createS3RecordStore } from './s3-record-store.js'

/**
 * Probe results per server and bucket, shared by the instances of this
 * process: a server either enforces preconditions or it does not. Failed
 * probes (server unreachable) are not kept.
 */
const probes = new Map<string, Promise<ProbeResult>>()

/** Turns a zod failure into `INVALID_ARGUMENT` naming the field, never echoing values. */
function invalidOptions(issues: readonly { path: PropertyKey[]; message: string }[]) {
  const first = issues[0]
  const field = first?.path.map(String).join('.') || 'options'
  return new AgentStateError(
    'INVALID_ARGUMENT',
    `Invalid S3 backend option ${field}: ${first?.message}`,
    { context: { field } },
  )
}

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
  const parsed = s3OptionsSchema.safeParse(options)
  if (!parsed.success) throw invalidOptions(parsed.error.issues)
  const rawPrefix = options.prefix ?? ''
  const prefix = rawPrefix === '' || rawPrefix.endsWith('/') ? rawPrefix : `${rawPrefix}/`
  const namespace = options.namespace ?? 'default'
  const base = `${prefix}${namespace}/`
  // Keys longer than the room S3 leaves after the base get a shortened object name.
  const naming = createObjectNaming((options.maxObjectKeyBytes ?? 1024) - utf8ByteLength(base))
  if (naming === undefined) {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      'The prefix and namespace leave too little of maxObjectKeyBytes for object names',
      { context: { field: 'prefix' } },
    )
  }
  const bucket = options.bucket
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000
  const reads = { attempts: options.readAttempts ?? 3, timeoutMs: requestTimeoutMs }
  const clientConfig = {
    region: options.region ?? 'us-east-1',
    forcePathStyle: options.forcePathStyle ?? false,
    // Default checksums add aws-chunked trailers that RGW and older servers refuse.
    requestChecksumCalculation: 'WHEN_REQUIRED' as const,
    responseChecksumValidation: 'WHEN_REQUIRED' as const,
    requestHandler: {
      // Belt and braces: every request also runs under withinDeadline, which covers the body.
      requestTimeout: requestTimeoutMs,
      // Without it the SDK only logs a warning and the request waits forever.
      throwOnRequestTimeout: true,
      connectionTimeout: options.connectTimeoutMs ?? 5000,
    },
    ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
    ...(options.credentials === undefined ? {} : { credentials: options.credentials }),
  }
  // Reads are retried by runRead, each attempt under a deadline that covers the body.
  const reader = new S3Client({ ...clientConfig, maxAttempts: 1 })
  // One attempt: the SDK's retries (and its retry quota) would blur conditional outcomes.
  const writer = new S3Client({ ...clientConfig, maxAttempts: 1 })

  let prepared: Promise<void> | undefined
  const prepare = (): Promise<void> => {
    if (options.createBucket !== true) return Promise.resolve()
    prepared ??= ensureBucket(reader, bucket, reads).catch((error: unknown) => {
      prepared = undefined
      throw error
    })
    return prepared
  }

  const probeKey = `${options.endpoint ?? `aws:${clientConfig.region}`}|${bucket}`
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
      maxValueBytes: options.maxValueBytes ?? 64 * 1024 * 1024,
    },
    writeAttempts: options.writeAttempts ?? 3,
    requestTimeoutMs,
    reads,
    listConcurrency: options.listConcurrency ?? 16,
    probe,
    prepare,
  })
  return createRecordBackend(store, options.clock === undefined ? {} : { clock: options.clock })
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
    const code = codeOf(error)
    if (code !== 'BucketAlreadyOwnedByYou' && code !== 'BucketAlreadyExists') {
      throw toAgentStateError(error, 'Creating the bucket')
    }
  }
}
