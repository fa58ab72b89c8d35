import { createS3Backend } from '@agent-state/s3'
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { createStorage } from 'unstorage'
import s3Driver from 'unstorage/drivers/s3'
import { type CasToken, forEachConcurrent, populatedKey, type Subject } from '../subject.js'
import { agentStateSubject } from './agent-state.js'
import { unstorageSubject } from './peers.js'

/** Where and how to reach the S3 server. */
export interface S3Target {
  readonly endpoint: string
  readonly region: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
}

/** The client settings of the agent-state S3 backend's writer, for a like-for-like raw client. */
function rawClient(target: S3Target): S3Client {
  return new S3Client({
    region: target.region,
    endpoint: target.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: target.accessKeyId, secretAccessKey: target.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
  })
}

const statusOf = (error: unknown): number | undefined =>
  (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode

/** Strips the quotes S3 puts around ETags; RGW accepts If-Match without them (see the baseline). */
const etagOf = (etag: string | undefined): string => {
  if (etag === undefined) throw new Error('PutObject returned no ETag')
  return etag.replaceAll('"', '')
}

/**
 * @aws-sdk/client-s3 doing the least equivalent work: PutObject, GetObject,
 * HeadObject, DeleteObject, `If-Match` with the ETag of the previous write
 * for compare-and-set, `If-None-Match: *` for create, ListObjectsV2 for a
 * page. Objects live under `raw/` in `bucket`.
 */
export function rawS3Subject(target: S3Target, bucket: string): Subject {
  const client = rawClient(target)
  const k = (key: string): string => `raw/${key}`
  const put = async (
    key: string,
    value: Uint8Array,
    condition: { IfMatch?: string; IfNoneMatch?: string } = {},
  ) => {
    const reply = await client.send(
      new PutObjectCommand({ Bucket: bucket, Key: k(key), Body: value, ...condition }),
    )
    return etagOf(reply.ETag)
  }
  return {
    backend: 's3',
    path: 'raw',
    label: 'raw @aws-sdk/client-s3',
    notes: {
      cas: 'PutObject If-Match: <ETag of the previous write>',
      create: 'PutObject If-None-Match: *',
      lease: 'three conditional PutObjects of a lease object',
      list: 'ListObjectsV2 Prefix, StartAfter, MaxKeys',
    },
    async put(key, value) {
      await put(key, value)
    },
    async get(key) {
      try {
        const reply = await client.send(new GetObjectCommand({ Bucket: bucket, Key: k(key) }))
        return (await reply.Body?.transformToByteArray()) ?? new Uint8Array(0)
      } catch (error) {
        if (statusOf(error) === 404) return null
        throw error
      }
    },
    async head(key) {
      try {
        await client.send(new HeadObjectCommand({ Bucket: bucket, Key: k(key) }))
        return true
      } catch (error) {
        if (statusOf(error) === 404) return false
        throw error
      }
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: k(key) }))
    },
    casInit: (key, value) => put(key, value),
    cas: (key, value, token: CasToken) => put(key, value, { IfMatch: String(token) }),
    async create(key, value) {
      await put(key, value, { IfNoneMatch: '*' })
    },
    async leaseCycle(key) {
      const lease = `${key}.lease`
      const body = new Uint8Array(64)
      let etag: string
      try {
        body[0] = 0
        etag = await put(lease, body, { IfNoneMatch: '*' })
      } catch (error) {
        if (statusOf(error) !== 412 && statusOf(error) !== 409) throw error
        const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: k(lease) }))
        etag = etagOf(head.ETag)
        body[0] = 1
        etag = await put(lease, body, { IfMatch: etag })
      }
      for (let step = 1; step < 3; step++) {
        body[0] = step + 1
        body[1] = Math.random() * 256
        etag = await put(lease, body, { IfMatch: etag })
      }
    },
    async listPage(prefix, limit, cursor) {
      const reply = await client.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: k(prefix),
          MaxKeys: limit,
          ...(cursor === undefined ? {} : { StartAfter: k(cursor) }),
        }),
      )
      const keys = (reply.Contents ?? []).map((object) => (object.Key as string).slice(4))
      const last = keys[keys.length - 1]
      return reply.IsTruncated === true && last !== undefined ? { keys, cursor: last } : { keys }
    },
    async populate(prefix, count, value) {
      await forEachConcurrent(count, 32, (index) => put(populatedKey(prefix, index), value))
    },
    async close() {
      client.destroy()
    },
  }
}

/** Creates the buckets the S3 subjects use (agent-state, raw, unstorage: one each). */
async function createBuckets(target: S3Target, buckets: readonly string[]): Promise<void> {
  const client = rawClient(target)
  try {
    for (const bucket of buckets) {
      try {
        await client.send(new CreateBucketCommand({ Bucket: bucket }))
      } catch (error) {
        if (statusOf(error) !== 409) throw error
      }
    }
  } finally {
    client.destroy()
  }
}

/** agent-state S3, the raw SDK and unstorage (s3 driver, aws4fetch) on one RGW. */
export async function s3Subjects(target: S3Target): Promise<Subject[]> {
  await createBuckets(target, ['bench-agent-state', 'bench-raw', 'bench-unstorage'])
  const backend = createS3Backend({
    bucket: 'bench-agent-state',
    namespace: 'bench',
    endpoint: target.endpoint,
    region: target.region,
    forcePathStyle: true,
    credentials: { accessKeyId: target.accessKeyId, secretAccessKey: target.secretAccessKey },
  })
  const storage = createStorage({
    driver: s3Driver({
      endpoint: target.endpoint,
      region: target.region,
      bucket: 'bench-unstorage',
      accessKeyId: target.accessKeyId,
      secretAccessKey: target.secretAccessKey,
    }),
  })
  return [
    agentStateSubject(backend, 's3'),
    rawS3Subject(target, 'bench-raw'),
    unstorageSubject(storage, 's3', 'unstorage (s3 driver, aws4fetch)', async () => {}, {
      // Its getKeys sends one ListObjectsV2 of the whole bucket without a prefix
      // and reads only the first page: it cannot list 1k+ keys correctly.
      listing: false,
    }),
  ]
}
