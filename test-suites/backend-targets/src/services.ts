import { randomBytes } from 'node:crypto'
import { inject } from 'vitest'

/** Where the run's private `redis-server` listens (started by the global setup). */
export interface RedisTestConfig {
  readonly host: string
  readonly port: number
}

/** The run's private Ceph RGW (started by the global setup); the bucket is created on first use. */
export interface S3TestConfig {
  readonly endpoint: string
  readonly region: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
  readonly bucket: string
}

/** The run's private PostgreSQL (started by the global setup). */
export interface PostgresTestConfig {
  /** `postgres://` URL of its superuser, password included: never print it. */
  readonly url: string
}

declare module 'vitest' {
  export interface ProvidedContext {
    backendTargetsRedis: RedisTestConfig
    backendTargetsS3: S3TestConfig
    backendTargetsPostgres: PostgresTestConfig
  }
}

/** The Redis settings; throws (fails the test) when the global setup provided none. */
export function redisConfig(): RedisTestConfig {
  const config = inject('backendTargetsRedis')
  if (config === undefined) throw new Error('the redis-server global setup did not run')
  return config
}

/** The RGW settings; throws (fails the test) when the global setup provided none. */
export function s3Config(): S3TestConfig {
  const config = inject('backendTargetsS3')
  if (config === undefined) throw new Error('the RGW global setup did not run')
  return config
}

/** The PostgreSQL settings; throws (fails the test) when the global setup provided none. */
export function postgresConfig(): PostgresTestConfig {
  const config = inject('backendTargetsPostgres')
  if (config === undefined) throw new Error('the PostgreSQL global setup did not run')
  return config
}

/** `postgres://` URL of the test server (its credentials included: children need them). */
export function postgresChildBackend(): ChildBackend {
  return { url: `${postgresConfig().url}?poolSize=3`, env: {} }
}

/** A fresh name (namespace or key prefix) so tests sharing one server never see each other's keys. */
export function freshName(label: string): string {
  return `${label}-${randomBytes(6).toString('hex')}`
}

/** A backend URL a child process can open; `env` carries what must not go in a URL (S3 credentials). */
export interface ChildBackend {
  readonly url: string
  readonly env: Readonly<Record<string, string>>
}

/** `redis://` URL of the test server (no credentials: the server has no password). */
export function redisChildBackend(): ChildBackend {
  const { host, port } = redisConfig()
  return { url: `redis://${host}:${port}`, env: {} }
}

/**
 * `s3://` URL of the test RGW under a fresh prefix. Credentials travel in the
 * standard AWS environment variables, which the SDK's default chain reads.
 */
export function s3ChildBackend(prefix: string): ChildBackend {
  const config = s3Config()
  const query = new URLSearchParams({
    endpoint: config.endpoint,
    region: config.region,
    forcePathStyle: 'true',
    createBucket: 'true',
  })
  return {
    url: `s3://${config.bucket}/${prefix}?${query.toString()}`,
    env: {
      AWS_ACCESS_KEY_ID: config.accessKeyId,
      AWS_SECRET_ACCESS_KEY: config.secretAccessKey,
    },
  }
}
