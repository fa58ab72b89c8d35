import { AgentStateError, openBackend } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { createBackendFromUrl, createS3Backend, type S3BackendOptions } from '../src/index.js'
import { freshNamespace, s3Config } from './s3-config.js'

function thrown(fn: () => unknown): AgentStateError {
  try {
    fn()
  } catch (error) {
    if (error instanceof AgentStateError) return error
    throw error
  }
  throw new Error('expected a throw')
}

// Issue 19: every backend reports bad options and bad URLs in core's one shape.
describe('S3 options', () => {
  it('refuses an unknown option (a typo) with the shared INVALID_ARGUMENT shape', () => {
    const options = { bucket: 'agents', requestTimeout: 10 } as unknown as S3BackendOptions
    const error = thrown(() => createS3Backend(options))
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).toMatch(/^Invalid S3 backend option options: /)
    expect(error.message).toContain('requestTimeout')
    expect(error.context).toEqual({
      backend: 'S3',
      field: 'options',
      issues: [{ field: 'options', message: expect.stringContaining('requestTimeout') }],
    })
  })

  it('accepts credentials the AWS SDK has annotated ($source, expiration) and uses them', async () => {
    const config = s3Config()
    const annotated = {
      ...config.credentials,
      $source: { CREDENTIALS_CODE: 'e' },
      expiration: new Date(Date.now() + 3_600_000),
    }
    const backend = createS3Backend({
      ...config,
      credentials: annotated,
      namespace: freshNamespace('annotated'),
    })
    try {
      expect((await backend.put('k', new Uint8Array([1]))).size).toBe(1)
    } finally {
      await backend.destroy?.()
      await backend.close()
    }
  })

  it('names the bad field in the message and context', () => {
    const error = thrown(() => createS3Backend({ bucket: 'agents', readAttempts: 11 }))
    expect(error.message).toMatch(/^Invalid S3 backend option readAttempts: /)
    expect(error.context).toMatchObject({ backend: 'S3', field: 'readAttempts' })
  })

  it('reports a prefix leaving no room for object names in the same shape', () => {
    const error = thrown(() =>
      createS3Backend({ bucket: 'agents', prefix: 'p'.repeat(100), maxObjectKeyBytes: 64 }),
    )
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).toMatch(/^Invalid S3 backend option prefix: /)
    expect(error.context).toMatchObject({ backend: 'S3', field: 'prefix' })
  })

  it('still accepts the options openBackend forwards (namespace, clock)', async () => {
    const config = s3Config()
    const url = `s3://${config.bucket}/opts?endpoint=${encodeURIComponent(config.endpoint)}&region=${config.region}&forcePathStyle=true`
    const backend = await openBackend(url, {
      namespace: freshNamespace('opts'),
      clock: () => 5,
      credentials: config.credentials,
      importer: () => import('../src/index.js'),
    } as Parameters<typeof openBackend>[1])
    try {
      expect((await backend.put('k', new Uint8Array([1]))).updatedAt).toBe(5)
    } finally {
      await backend.destroy?.()
      await backend.close()
    }
  })
})

describe('S3 URLs', () => {
  it.each([
    ['not s3', 'https://bucket/p', /expected s3:\/\/bucket\/prefix/],
    ['credentials', 's3://AKID:hunter2-secret@bucket/p', /credentials do not belong in the URL/],
    ['no bucket', 's3:///p', /the bucket is missing/],
    ['an unknown parameter', 's3://bucket/p?unknown=1', /unknown query parameter "unknown"/],
    ['a repeated parameter', 's3://bucket/p?region=a&region=b', /repeated/],
    ['a malformed boolean', 's3://bucket/p?forcePathStyle=maybe', /must be true or false/],
  ])('refuses %s with the shared URL error shape', (_what, url, problem) => {
    const error = thrown(() => createBackendFromUrl(url))
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).toMatch(/^Invalid S3 backend URL /)
    expect(error.message).toMatch(problem)
    expect(error.message).not.toContain('hunter2-secret')
    expect(error.context).toMatchObject({ backend: 'S3', field: 'url' })
    expect(JSON.stringify(error.context)).not.toContain('hunter2-secret')
  })
})
