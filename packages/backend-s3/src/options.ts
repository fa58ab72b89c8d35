import { type Clock, namespaceSchema } from '@agent-state/core'
import { z } from 'zod'

/** Static credentials. Without them the AWS SDK's default provider chain is used. */
export const s3CredentialsSchema = z.object({
  /** Access key id. */
  accessKeyId: z.string().min(1),
  /** Secret access key. Never shown in errors or logs. */
  secretAccessKey: z.string().min(1),
  /** Session token of temporary credentials. */
  sessionToken: z.string().min(1).optional(),
})

/** Options of `createS3Backend`, as a zod schema; each field is documented on {@link S3BackendOptions}. */
export const s3OptionsSchema = z.object({
  /** The bucket holding the records. It must exist unless `createBucket` is set. */
  bucket: z.string().min(3).max(63),
  /**
   * Object key prefix before the namespace, e.g. `"agents/"`. A trailing `/`
   * is added when missing. Default: none.
   */
  prefix: z
    .string()
    .max(512)
    .refine((value) => !value.startsWith('/'), 'the prefix must not start with "/"')
    .optional(),
  /** Isolates this instance's keys: objects live under `<prefix><namespace>/`. Default `"default"`. */
  namespace: namespaceSchema.optional(),
  /** S3 endpoint URL, e.g. `http://127.0.0.1:7480`. Default: AWS for the region. */
  endpoint: z.url().optional(),
  /** Region used for signing. Default `"us-east-1"`. */
  region: z.string().min(1).optional(),
  /** Path-style requests (`endpoint/bucket/key`); needed by RGW and MinIO. Default `false`. */
  forcePathStyle: z.boolean().optional(),
  /** Static credentials; default: the AWS SDK's default provider chain. */
  credentials: s3CredentialsSchema.optional(),
  /** Create the bucket on first use when it does not exist. Default `false`. */
  createBucket: z.boolean().optional(),
  /** Clock for `updatedAt` and lease expiry (`host` lease clock). Default `Date.now`. */
  clock: z.custom<Clock>((value) => typeof value === 'function').optional(),
  /** Largest value accepted, in bytes. Default 64 MiB (values are sent in one PutObject). */
  maxValueBytes: z
    .number()
    .int()
    .positive()
    .max(5 * 1024 ** 3)
    .optional(),
  /** Longest object key the server accepts, in UTF-8 bytes. Default 1024 (AWS S3). */
  maxObjectKeyBytes: z.number().int().min(64).optional(),
  /**
   * Deadline of each request in ms, covering status, headers and the whole
   * body; a timed-out write is ambiguous. Default 30 000.
   */
  requestTimeoutMs: z.number().int().positive().optional(),
  /** Give up connecting after this many ms (nothing was sent). Default 5000. */
  connectTimeoutMs: z.number().int().positive().optional(),
  /** Attempts of each read, listing page and namespace delete (they are idempotent). Default 3. */
  readAttempts: z.number().int().min(1).max(10).optional(),
  /**
   * How often one conditional write is sent when the outcome is ambiguous
   * (5xx, timeout, dropped connection) before the result is resolved by
   * reading back its write id. Default 3.
   */
  writeAttempts: z.number().int().min(1).max(10).optional(),
  /** GetObject requests in flight at once while listing. Default 16. */
  listConcurrency: z.number().int().min(1).max(256).optional(),
})

/** Static S3 credentials. */
export interface S3Credentials {
  /** Access key id. */
  readonly accessKeyId: string
  /** Secret access key. Never shown in errors or logs. */
  readonly secretAccessKey: string
  /** Session token of temporary credentials. */
  readonly sessionToken?: string
}

/** Options of `createS3Backend`. */
export interface S3BackendOptions {
  /** The bucket holding the records. It must exist unless `createBucket` is set. */
  readonly bucket: string
  /** Object key prefix before the namespace, e.g. `"agents/"`; a trailing `/` is added. Default: none. */
  readonly prefix?: string
  /** Isolates this instance's keys: objects live under `<prefix><namespace>/`. Default `"default"`. */
  readonly namespace?: string
  /** S3 endpoint URL, e.g. `http://127.0.0.1:7480`. Default: AWS for the region. */
  readonly endpoint?: string
  /** Region used for signing. Default `"us-east-1"`. */
  readonly region?: string
  /** Path-style requests (`endpoint/bucket/key`); needed by RGW and MinIO. Default `false`. */
  readonly forcePathStyle?: boolean
  /** Static credentials; default: the AWS SDK's default provider chain (env, profile, IMDS...). */
  readonly credentials?: S3Credentials
  /** Create the bucket on first use when it does not exist. Default `false`. */
  readonly createBucket?: boolean
  /** Clock for `updatedAt` and lease expiry (`host` lease clock). Default `Date.now`. */
  readonly clock?: Clock
  /** Largest value accepted, in bytes. Default 64 MiB (values are sent in one PutObject). */
  readonly maxValueBytes?: number
  /** Longest object key the server accepts, in UTF-8 bytes. Default 1024 (AWS S3). */
  readonly maxObjectKeyBytes?: number
  /**
   * Deadline of each request in ms, covering status, headers and the whole
   * body; a timed-out read is `UNAVAILABLE`, a timed-out write ambiguous
   * (resent, read back, else `INDETERMINATE`). Default 30 000.
   */
  readonly requestTimeoutMs?: number
  /** Give up connecting after this many ms (nothing was sent). Default 5000. */
  readonly connectTimeoutMs?: number
  /** Attempts of each read, listing page and namespace delete (they are idempotent). Default 3. */
  readonly readAttempts?: number
  /**
   * How often one conditional write is sent when its outcome is ambiguous
   * (5xx, timeout, dropped connection) before it is resolved by reading back
   * its write id. Default 3.
   */
  readonly writeAttempts?: number
  /** GetObject requests in flight at once while listing. Default 16. */
  readonly listConcurrency?: number
}
