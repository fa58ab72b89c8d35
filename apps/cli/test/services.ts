import { randomBytes } from 'node:crypto'
import { inject } from 'vitest'

/** The servers of the global setup. */
export interface ServicesConfig {
  readonly redis: { readonly host: string; readonly port: number; readonly password: string }
  readonly s3: {
    readonly endpoint: string
    readonly region: string
    readonly accessKeyId: string
    readonly secretAccessKey: string
  }
  /** `url`: the superuser's `postgres://` URL, password included (scram over TCP). */
  readonly postgres: { readonly url: string }
}

declare module 'vitest' {
  export interface ProvidedContext {
    cliServices: ServicesConfig
  }
}

/** The servers' settings; throws (fails the test) when the global setup provided none. */
export function services(): ServicesConfig {
  const config = inject('cliServices')
  if (config === undefined) throw new Error('the global setup did not run')
  return config
}

/** A fresh name, so tests sharing one server never see each other's keys. */
export function freshName(label: string): string {
  return `${label}-${randomBytes(6).toString('hex')}`
}

/** A `redis://` URL with the server's password (`password` overrides it). */
export function redisUrl(password?: string): string {
  const { host, port, password: real } = services().redis
  return `redis://default:${encodeURIComponent(password ?? real)}@${host}:${port}/0`
}

/** An `s3://` URL of the RGW under a fresh prefix, in `bucket` (created on first use). */
export function s3Url(bucket = 'agent-state-cli', create = true): string {
  const { endpoint, region } = services().s3
  const query = `endpoint=${encodeURIComponent(endpoint)}&region=${region}&forcePathStyle=true${create ? '&createBucket=true' : ''}`
  return `s3://${bucket}/${freshName('p')}?${query}`
}

/** The environment a CLI process needs for S3 (credentials never go in a URL). */
export function s3Env(): Record<string, string> {
  const { accessKeyId, secretAccessKey } = services().s3
  return { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey }
}

/** A `postgres://` URL of the test server in a fresh schema (its credentials included). */
export function postgresUrl(): string {
  return `${services().postgres.url}?schema=${freshName('cli').replaceAll('-', '_')}`
}
