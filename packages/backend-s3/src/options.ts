import { type Clock, DEFAULT_MAX_VALUE_BYTES, namespaceSchema } from '@agent-state/core'
import { z } from 'zod'

/**
 * Static credentials, as a zod schema. Without them the AWS SDK's default
 * provider chain is used (environment, shared config, container or instance
 * roles). Not strict, unlike the options: a credentials object the AWS SDK
 * has handled carries its own extra fields (`$source`, `expiration`,
 * `accountId`), and refusing them would break reusing it; they are passed on.
 */
export const s3CredentialsSchema = z.looseObject({
  /** Access key id. */
  accessKeyId: z.string().min(1),
  /** Secret access key. Never shown in errors or logs. */
  secretAccessKey: z.string().min(1),
  /** Session token of temporary credentials. */
  sessionToken: z.string().min(1).optional(),
})

/** Static S3 credentials (see {@link s3CredentialsSchema}). */
export type S3Credentials = z.input<typeof s3CredentialsSchema>

/**
 * Options of `createS3Backend`, as a zod schema: the only source of the option
 * types. Strict: an unknown option (a typo) is `INVALID_ARGUMENT`.
 */
export const s3OptionsSchema = z.strictObject({
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
  namespace: namespaceSchema.default('default'),
  /** S3 endpoint URL, e.g. `http://127.0.0.1:7480`. Default: AWS for the region. */
  endpoint: z.url().optional(),
  /** Region used for signing. Default `"us-east-1"`. */
  region: z.string().min(1).default('us-east-1'),
  /** Path-style requests (`endpoint/bucket/key`); needed by RGW and MinIO. Default `false`. */
  forcePathStyle: z.boolean().default(false),
  /** Static credentials; default: the AWS SDK's default provider chain (env, profile, IMDS...). */
  credentials: s3CredentialsSchema.optional(),
  /** Create the bucket on first use when it does not exist. Default `false`. */
  createBucket: z.boolean().default(false),
  /** Clock for `updatedAt` and lease expiry (`host` lease clock). Default `Date.now`. */
  clock: z
    .custom<Clock>((value) => typeof value === 'function', 'clock must be a function')
    .optional(),
  /** Largest value accepted, in bytes. Default 64 MiB (values are sent in one PutObject). */
  maxValueBytes: z
    .number()
    .int()
    .positive()
    .max(5 * 1024 ** 3)
    .default(DEFAULT_MAX_VALUE_BYTES),
  /** Longest object key the server accepts, in UTF-8 bytes. Default 1024 (AWS S3). */
  maxObjectKeyBytes: z.number().int().min(64).default(1024),
  /**
   * Deadline of each request in ms, covering status, headers and the whole
   * body; a timed-out read is `UNAVAILABLE`, a timed-out write ambiguous
   * (resent, read back, else `INDETERMINATE`). Default 30 000.
   */
  requestTimeoutMs: z.number().int().positive().default(30_000),
  /** Give up connecting after this many ms (nothing was sent). Default 5000. */
  connectTimeoutMs: z.number().int().positive().default(5000),
  /** Attempts of each read, listing page and namespace delete (they are idempotent). Default 3. */
  readAttempts: z.number().int().min(1).max(10).default(3),
  /**
   * How often one conditional write is sent when its outcome is ambiguous
   * (5xx, timeout, dropped connection) before it is resolved by reading back
   * its write id. Default 3.
   */
  writeAttempts: z.number().int().min(1).max(10).default(3),
  /** GetObject requests in flight at once while listing. Default 16. */
  listConcurrency: z.number().int().min(1).max(256).default(16),
})

/** Options of `createS3Backend` (what a caller passes; see {@link s3OptionsSchema}). */
export type S3BackendOptions = z.input<typeof s3OptionsSchema>
/** The options after parsing, defaults applied. */
export type ResolvedS3Options = z.output<typeof s3OptionsSchema>
