import { inspect } from 'node:util'
import { isAgentStateError, openBackend } from '@agent-state/core'
import { DeleteBucketCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createBackendFromUrl, createS3Backend } from '../src/index.js'
import { freshNamespace, s3Config } from './s3-config.js'

const value = new TextEncoder().encode('v')

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a failure')
}

/** Every way an error may end up in a log. */
function everyRendering(error: unknown): string {
  const e = error as { message?: string; context?: unknown; cause?: unknown; stack?: string }
  return [
    String(error),
    e.message,
    e.stack,
    JSON.stringify(e.context),
    JSON.stringify(error),
    inspect(error, { depth: Number.POSITIVE_INFINITY, showHidden: true }),
    inspect(e.cause, { depth: Number.POSITIVE_INFINITY, showHidden: true }),
  ].join('\n')
}

afterEach(() => {
  vi.restoreAllMocks()
})

describe('configuration', () => {
  it('opens by s3:// URL through openBackend and keeps objects under prefix/namespace/', async () => {
    const config = s3Config()
    const namespace = freshNamespace('url')
    const url = `s3://${config.bucket}/apps/agents?endpoint=${encodeURIComponent(config.endpoint)}&region=${config.region}&forcePathStyle=true`
    const backend = await openBackend(url, {
      namespace,
      credentials: config.credentials,
      importer: () => import('../src/index.js'),
    } as Parameters<typeof openBackend>[1])
    try {
      await backend.put('hello', value)
      const client = new S3Client({ ...config })
      const listed = await client.send(
        new ListObjectsV2Command({ Bucket: config.bucket, Prefix: `apps/agents/${namespace}/` }),
      )
      client.destroy()
      expect(listed.Contents?.map((object) => object.Key)).toEqual([
        `apps/agents/${namespace}/hello`,
      ])
    } finally {
      await backend.destroy?.()
      await backend.close()
    }
  })

  it('creates a missing bucket only when createBucket says so', async () => {
    const config = s3Config()
    const bucket = `created-${freshNamespace('b').toLowerCase()}`
    const without = createS3Backend({ ...config, bucket, readAttempts: 1 })
    const error = await caught(without.put('k', value))
    expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
    expect((error as Error).message).toContain('bucket does not exist')
    await without.close()
    const backend = createS3Backend({ ...config, bucket, createBucket: true })
    const client = new S3Client({ ...config })
    try {
      await backend.put('k', value)
      expect((await backend.get('k'))?.value).toEqual(value)
    } finally {
      await backend.destroy?.()
      await backend.close()
      await client.send(new DeleteBucketCommand({ Bucket: bucket }))
      client.destroy()
    }
  })

  it('uses the SDK default credential chain when no credentials are given', async () => {
    const config = s3Config()
    vi.stubEnv('AWS_ACCESS_KEY_ID', config.credentials.accessKeyId)
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', config.credentials.secretAccessKey)
    const { credentials: _omitted, ...withoutCredentials } = config
    const backend = createS3Backend({ ...withoutCredentials, namespace: freshNamespace('env') })
    try {
      await backend.put('k', value)
      expect(await backend.get('k')).not.toBeNull()
    } finally {
      await backend.destroy?.()
      await backend.close()
      vi.unstubAllEnvs()
    }
  })

  it('says the credentials are missing, not that the server is unreachable, when there are none', async () => {
    // An environment where the SDK's default chain finds nothing, without waiting on instance metadata.
    for (const name of [
      'AWS_ACCESS_KEY_ID',
      'AWS_SECRET_ACCESS_KEY',
      'AWS_SESSION_TOKEN',
      'AWS_PROFILE',
      'AWS_CONTAINER_CREDENTIALS_FULL_URI',
      'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
      'AWS_WEB_IDENTITY_TOKEN_FILE',
    ]) {
      vi.stubEnv(name, undefined)
    }
    vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', '/nonexistent/agent-state/credentials')
    vi.stubEnv('AWS_CONFIG_FILE', '/nonexistent/agent-state/config')
    vi.stubEnv('AWS_EC2_METADATA_DISABLED', 'true')
    const { credentials: _omitted, ...withoutCredentials } = s3Config()
    const backend = createS3Backend({ ...withoutCredentials, namespace: freshNamespace('nocred') })
    try {
      for (const operation of [
        () => backend.get('k'),
        () => backend.put('k', value, { ifNoneMatch: '*' }),
        () => backend.list(),
      ]) {
        const error = await caught(operation())
        expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
        const { message, retryable, context } = error as {
          message: string
          retryable: boolean
          context: Record<string, unknown>
        }
        expect(context.reason).toBe('credentials-missing')
        expect(retryable).toBe(false)
        expect(message).toMatch(/no S3 credentials/)
        expect(message).not.toMatch(/unreachable/)
      }
    } finally {
      await backend.close()
      vi.unstubAllEnvs()
    }
  })

  it('rejects bad URLs and options with INVALID_ARGUMENT, never echoing credentials', () => {
    const secret = 'SuperSecretValue123'
    for (const url of [
      `s3://AKID:${secret}@bucket/prefix`,
      's3:///no-bucket',
      's3://bucket/p?unknown=1',
      's3://bucket/p?forcePathStyle=maybe',
    ]) {
      let error: unknown
      try {
        createBackendFromUrl(url)
      } catch (caughtError) {
        error = caughtError
      }
      expect(isAgentStateError(error, 'INVALID_ARGUMENT')).toBe(true)
      expect(everyRendering(error)).not.toContain(secret)
    }
    let error: unknown
    try {
      createS3Backend({
        bucket: 'b',
        credentials: { accessKeyId: 'a', secretAccessKey: secret },
        endpoint: 'not a url',
      })
    } catch (caughtError) {
      error = caughtError
    }
    expect(isAgentStateError(error, 'INVALID_ARGUMENT')).toBe(true)
    expect(everyRendering(error)).not.toContain(secret)
  })

  it('escapes control and bidi characters of a key in error messages (issue 21)', async () => {
    // Valid keys may hold C1 controls and bidi overrides (C0 and DEL are refused as keys).
    const key = 'c1\u009bkey\u202e'
    const backend = createS3Backend({
      ...s3Config(),
      bucket: 'no-such-bucket-here',
      namespace: freshNamespace('quote'),
      readAttempts: 1,
    })
    try {
      const error = await caught(backend.get(key))
      expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
      const { message } = error as Error
      expect(message).toContain('"c1\\u009bkey\\u202e"')
      expect(message).not.toMatch(/[\u007f-\u009f\u202e]/)
    } finally {
      await backend.close()
    }
  })

  it('keeps credentials out of errors and logs when the server refuses them', async () => {
    const config = s3Config()
    const logged: string[] = []
    for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
        logged.push(args.map((arg) => inspect(arg, { depth: 10 })).join(' '))
      })
    }
    const wrongSecret = `${config.credentials.secretAccessKey}-wrong`
    const wrong = createS3Backend({
      ...config,
      namespace: freshNamespace('creds'),
      credentials: { accessKeyId: config.credentials.accessKeyId, secretAccessKey: wrongSecret },
      readAttempts: 1,
    })
    const missingBucket = createS3Backend({
      ...config,
      bucket: 'no-such-bucket-here',
      namespace: freshNamespace('creds'),
    })
    try {
      const errors = [
        await caught(wrong.put('k', value)),
        await caught(wrong.get('k')),
        await caught(wrong.list()),
        await caught(missingBucket.put('k', value)),
      ]
      for (const error of errors) {
        expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
        const text = everyRendering(error)
        expect(text).not.toContain(wrongSecret)
        expect(text).not.toContain(config.credentials.secretAccessKey)
      }
      expect((errors[0] as Error).message).toContain('access denied')
      expect((errors[3] as Error).message).toContain('bucket does not exist')
      const logText = logged.join('\n')
      expect(logText).not.toContain(config.credentials.secretAccessKey)
    } finally {
      await wrong.close()
      await missingBucket.close()
    }
  })
})
