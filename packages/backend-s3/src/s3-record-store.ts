import { createHash } from 'node:crypto'
import {
  AgentStateError,
  backendFailure,
  type Capabilities,
  compareUtf8,
  mapLimited,
  quoteForMessage,
  type RecordCondition,
  type RecordScanOptions,
  type RecordStore,
  recordChanged,
  type ScannedRecord,
  type VersionedRecord,
} from '@agent-state/core'
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3'
import { BoundedMap } from './bounded-map.js'
import { decodeEnvelope, encodeEnvelope, newWriteId } from './envelope.js'
import {
  classify,
  type RequestOutcome,
  sdkErrorCode,
  statusOf,
  toAgentStateError,
} from './errors.js'
import { isInternal, type ObjectNaming } from './key-layout.js'
import { bareEtag, type ProbeResult } from './probe.js'
import { type ReadPolicy, runRead } from './read-requests.js'
import { readBody, withinDeadline } from './request-deadline.js'

/** What {@link createS3RecordStore} needs; built by `createS3Backend`. */
export interface S3RecordStoreConfig {
  /** Client for reads and listings: SDK retries allowed (they are idempotent). */
  readonly reader: S3Client
  /** Client for conditional writes: `maxAttempts: 1`, retries are ours. */
  readonly writer: S3Client
  readonly bucket: string
  /** `<prefix><namespace>/`: every object of this store starts with it. */
  readonly base: string
  /** How keys map to object names after the base (long keys are shortened). */
  readonly naming: ObjectNaming
  readonly capabilities: Omit<Capabilities, 'leaseClock'>
  /** How often an ambiguous conditional write is sent before it is resolved by read-back. */
  readonly writeAttempts: number
  /** Deadline of each write request, body included. */
  readonly requestTimeoutMs: number
  /** Attempts and deadline of reads, listings and deletes of the whole namespace. */
  readonly reads: ReadPolicy
  /** GetObject requests in flight at once while scanning. */
  readonly listConcurrency: number
  /** Resolves once the server is known to enforce conditional writes (cached). */
  readonly probe: () => Promise<ProbeResult>
  /** Runs before the first request (creates the bucket when configured). */
  readonly prepare: () => Promise<void>
}

/** Internal marker for "no such object" between helpers; never escapes. */
const NOT_FOUND = new Error('not found')

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

type PutResult =
  | { readonly ok: true; readonly etag: string }
  | { readonly ok: false; readonly outcome: RequestOutcome; readonly error: unknown }

/** What a read-back found about a write whose outcome was ambiguous. */
type ReadBack =
  | { readonly landed: true; readonly etag: string }
  | { readonly landed: false; readonly unchanged: boolean }

/**
 * A {@link RecordStore} on one S3 prefix: one object per key
 * (`<base><key>`), whose body is an envelope (unique write id, recent
 * predecessors) around core's record bytes, and whose ETag is the record
 * version. Writes are single conditional PutObjects (`If-None-Match: *` or
 * `If-Match: <etag>`); scans are ListObjectsV2 plus a GetObject per record
 * not in the local cache.
 */
export function createS3RecordStore(config: S3RecordStoreConfig): RecordStore {
  const { reader, writer, bucket, base, naming } = config
  /** Write ids carried by a known record version, for the next write's envelope. */
  const historyByEtag = new BoundedMap<readonly string[]>(4096, 4096 * 16 * 8, (h) => h.length * 16)
  /** Key and record bytes by version: ETags never repeat, so an entry never goes stale. */
  const recordByEtag = new BoundedMap<ScannedRecord>(
    10_000,
    32 * 1024 * 1024,
    (record) => record.data.byteLength + record.key.length,
  )

  /** Reads the object named `name`; checks it belongs to `expectedKey` when given. */
  async function getObject(
    name: string,
    expectedKey?: string,
  ): Promise<VersionedRecord & { key: string; history: readonly string[] }> {
    const objectKey = base + name
    const key = expectedKey ?? name
    let body: Uint8Array
    let etag: string
    try {
      const got = await runRead(config.reads, async (abortSignal) => {
        const output = await reader.send(new GetObjectCommand({ Bucket: bucket, Key: objectKey }), {
          abortSignal,
        })
        return { etag: bareEtag(output.ETag), body: await readBody(output.Body, abortSignal) }
      })
      etag = got.etag
      body = got.body
    } catch (error) {
      if (statusOf(error) === 404 && sdkErrorCode(error) !== 'NoSuchBucket') throw NOT_FOUND
      throw toAgentStateError(error, `Reading ${quoteForMessage(key)}`, key)
    }
    const envelope = decodeEnvelope(name, body, expectedKey)
    historyByEtag.set(etag, envelope.history)
    recordByEtag.set(etag, { key: envelope.key, data: envelope.data })
    return { key: envelope.key, data: envelope.data, version: etag, history: envelope.history }
  }

  async function read(key: string): Promise<VersionedRecord | null> {
    await config.prepare()
    try {
      const { data, version } = await getObject(naming.nameOf(key), key)
      return { data, version }
    } catch (error) {
      if (error === NOT_FOUND) return null
      throw error
    }
  }

  async function put(
    objectKey: string,
    body: Buffer,
    condition: RecordCondition,
    quote: boolean,
  ): Promise<PutResult> {
    const header =
      'absent' in condition
        ? { IfNoneMatch: '*' }
        : { IfMatch: quote ? `"${condition.version}"` : condition.version }
    try {
      const output = await withinDeadline(config.requestTimeoutMs, (abortSignal) =>
        writer.send(
          new PutObjectCommand({ Bucket: bucket, Key: objectKey, Body: body, ...header }),
          { abortSignal },
        ),
      )
      return { ok: true, etag: bareEtag(output.ETag) }
    } catch (error) {
      return { ok: false, outcome: classify(error, true), error }
    }
  }

  /** Whether the write with `writeId` landed; `INDETERMINATE` when the object cannot be read. */
  async function readBack(
    key: string,
    writeId: string,
    body: Buffer,
    condition: RecordCondition,
  ): Promise<ReadBack> {
    let current: Awaited<ReturnType<typeof getObject>>
    try {
      current = await getObject(naming.nameOf(key), key)
    } catch (error) {
      // Without an answer here, nobody can tell whether the write landed.
      if (error !== NOT_FOUND) throw indeterminate(key, error)
      return { landed: false, unchanged: 'absent' in condition }
    }
    if (current.history[0] === writeId) return { landed: true, etag: current.version }
    if (current.history.includes(writeId)) {
      // Ours landed and was replaced since; its version was the MD5 of its body.
      return { landed: true, etag: createHash('md5').update(body).digest('hex') }
    }
    return {
      landed: false,
      unchanged: 'version' in condition && current.version === condition.version,
    }
  }

  function indeterminate(key: string, cause: unknown): AgentStateError {
    return backendFailure({
      operation: 'write',
      mayHaveApplied: true,
      message: `The write of ${quoteForMessage(key)} may or may not have been applied: the server's answer was lost and reading it back could not tell`,
      context: { key },
      ...(cause instanceof AgentStateError ? { cause } : {}),
    })
  }

  async function write(key: string, data: Uint8Array, condition: RecordCondition): Promise<string> {
    await config.prepare()
    const probe = await config.probe()
    if (!probe.enforced) {
      throw new AgentStateError(
        'UNSUPPORTED',
        `The S3 server ${probe.problem}; agent-state needs enforced conditional PutObject for every write and lease, so it refuses to write rather than silently lose updates`,
        { context: { key, problem: probe.problem } },
      )
    }
    const writeId = newWriteId()
    const predecessors = 'version' in condition ? (historyByEtag.get(condition.version) ?? []) : []
    const body = encodeEnvelope(key, writeId, predecessors, data)
    const objectKey = base + naming.nameOf(key)
    let mayHaveApplied = false
    let lastError: unknown
    for (let attempt = 1; attempt <= config.writeAttempts; attempt++) {
      const result = await put(objectKey, body, condition, probe.quoteIfMatch)
      if (result.ok) {
        historyByEtag.set(result.etag, [writeId, ...predecessors])
        recordByEtag.set(result.etag, { key, data })
        return result.etag
      }
      lastError = result.error
      if (result.outcome === 'conflict') {
        // A refusal after an ambiguous attempt may be our own earlier write.
        if (!mayHaveApplied) throw recordChanged(key)
        const found = await readBack(key, writeId, body, condition)
        if (found.landed) return found.etag
        throw recordChanged(key)
      }
      if (result.outcome === 'fatal') {
        throw toAgentStateError(result.error, `Writing ${quoteForMessage(key)}`, key)
      }
      if (result.outcome === 'ambiguous') mayHaveApplied = true
      // Resend the same body: if the first one landed, the resend is refused
      // (its condition no longer holds) and the read-back finds our write id.
      if (attempt < config.writeAttempts) await sleep(10 * attempt + Math.random() * 20)
    }
    if (!mayHaveApplied) {
      throw toAgentStateError(lastError, `Writing ${quoteForMessage(key)}`, key)
    }
    const found = await readBack(key, writeId, body, condition)
    if (found.landed) return found.etag
    // The condition no longer holds and versions never repeat: our write can never land now.
    if (!found.unchanged) throw recordChanged(key)
    throw indeterminate(key, toAgentStateError(lastError, `Writing ${quoteForMessage(key)}`, key))
  }

  async function listPage(
    prefix: string,
    startAfter: string | undefined,
    limit: number,
    token?: string,
  ) {
    try {
      return await runRead(config.reads, (abortSignal) =>
        reader.send(
          new ListObjectsV2Command({
            Bucket: bucket,
            Prefix: base + prefix,
            MaxKeys: limit,
            ...(startAfter === undefined ? {} : { StartAfter: base + startAfter }),
            ...(token === undefined ? {} : { ContinuationToken: token }),
          }),
          { abortSignal },
        ),
      )
    } catch (error) {
      throw toAgentStateError(error, 'Listing')
    }
  }

  /**
   * Lists object names after `startAfter` until it has a batch it can use:
   * a trailing group of shortened names that may go on in the next page is
   * left for the next batch, unless the batch holds nothing else.
   */
  async function listBatch(
    prefix: string,
    startAfter: string | undefined,
    limit: number,
  ): Promise<{ objects: { name: string; etag: string }[]; done: boolean }> {
    const objects: { name: string; etag: string }[] = []
    let previous = startAfter
    let token: string | undefined
    for (;;) {
      const page = await listPage(prefix, startAfter, limit, token)
      for (const object of page.Contents ?? []) {
        const objectKey = object.Key ?? ''
        if (!objectKey.startsWith(base)) continue
        const name = objectKey.slice(base.length)
        if (previous !== undefined && compareUtf8(name, previous) <= 0) {
          throw new AgentStateError(
            'UNSUPPORTED',
            'The S3 server lists keys out of UTF-8 byte order; agent-state cannot page through it',
            { context: { key: name, previous } },
          )
        }
        previous = name
        objects.push({ name, etag: bareEtag(object.ETag) })
      }
      if (page.IsTruncated !== true) return { objects, done: true }
      token = page.NextContinuationToken
      let cut = objects.length
      const last = objects[cut - 1]
      if (last !== undefined && naming.isShortened(last.name)) {
        const head = naming.headOf(last.name)
        while (cut > 0) {
          const name = (objects[cut - 1] as { name: string }).name
          if (!naming.isShortened(name) || naming.headOf(name) !== head) break
          cut--
        }
      }
      if (cut > 0) {
        objects.length = cut
        return { objects, done: false }
      }
      if (token === undefined) return { objects, done: true }
    }
  }

  async function scan(
    options: RecordScanOptions,
  ): Promise<{ records: readonly ScannedRecord[]; done: boolean }> {
    await config.prepare()
    const prefix = naming.listPrefix(options.prefix)
    let startAfter = options.after === undefined ? undefined : naming.startAfter(options.after)
    for (;;) {
      const { objects, done } = await listBatch(prefix, startAfter, Math.min(options.limit, 1000))
      const wanted = objects.filter(
        (object) => naming.isShortened(object.name) || !isInternal(object.name),
      )
      const fetched = await mapLimited(wanted, config.listConcurrency, async (object) => {
        const cached = recordByEtag.get(object.etag)
        if (cached !== undefined) return cached
        const expected = naming.isShortened(object.name) ? undefined : object.name
        try {
          const record = await getObject(object.name, expected)
          return { key: record.key, data: record.data }
        } catch (error) {
          if (error === NOT_FOUND) return undefined
          throw error
        }
      })
      // Long keys sharing a head come back in hash order: sort them into byte order.
      const records = fetched
        .filter((record): record is ScannedRecord => record !== undefined)
        .filter(
          (record) =>
            record.key.startsWith(options.prefix) &&
            (options.after === undefined || compareUtf8(record.key, options.after) > 0),
        )
        .sort((a, b) => compareUtf8(a.key, b.key))
      const last = objects[objects.length - 1]
      // Nothing usable yet (internal, vanished or already-passed objects): move on.
      if (records.length > 0 || done || last === undefined) return { records, done }
      startAfter = last.name
    }
  }

  async function destroy(): Promise<void> {
    await config.prepare()
    for (;;) {
      const page = await listPage('', undefined, 1000)
      const objects = (page.Contents ?? []).flatMap((object) =>
        object.Key === undefined ? [] : [{ Key: object.Key }],
      )
      if (objects.length === 0) break
      try {
        // Deleting the same objects twice is harmless, so it is retried like a read.
        await runRead(config.reads, (abortSignal) =>
          reader.send(
            new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects, Quiet: true } }),
            { abortSignal },
          ),
        )
      } catch (error) {
        throw toAgentStateError(error, 'Destroying the namespace')
      }
      if (page.IsTruncated !== true) break
    }
    historyByEtag.clear()
    recordByEtag.clear()
  }

  return {
    name: 's3',
    capabilities: config.capabilities,
    // The ETag is a digest of the body (or a fresh id per write under SSE-KMS),
    // and every body carries a unique write id: any overwrite changes it.
    versionChangesWithBytes: true,
    read,
    write,
    scan,
    destroy,
    async close(): Promise<void> {
      historyByEtag.clear()
      recordByEtag.clear()
      reader.destroy()
      writer.destroy()
    },
  }
}
