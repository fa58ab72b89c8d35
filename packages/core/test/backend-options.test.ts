import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  AgentStateError,
  backendSchema,
  invalidBackendUrl,
  keyPrefixSchema,
  parseBackendOptions,
  parseOptions,
  readUrlQuery,
  writerIdentitySchema,
} from '../src/index.js'

const schema = z.strictObject({
  root: z.string().min(1, 'root must be a non-empty path'),
  password: z.string().optional(),
  retries: z.number().int().min(0).default(3),
  nested: z.object({ replicas: z.number().int().min(1) }).optional(),
})

function caught(run: () => unknown): AgentStateError {
  try {
    run()
  } catch (error) {
    if (error instanceof AgentStateError) return error
    throw error
  }
  throw new Error('expected an AgentStateError, nothing was thrown')
}

describe('parseBackendOptions', () => {
  it('returns the parsed options with defaults', () => {
    expect(parseBackendOptions(schema, { root: '/x' }, 'fs')).toEqual({ root: '/x', retries: 3 })
  })

  it('throws one INVALID_ARGUMENT shape naming backend and field', () => {
    const error = caught(() => parseBackendOptions(schema, { root: '', retries: -1 }, 'fs'))
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).toBe(
      'Invalid fs backend option root: root must be a non-empty path (and 1 more)',
    )
    expect(error.context).toEqual({
      backend: 'fs',
      field: 'root',
      issues: [
        { field: 'root', message: 'root must be a non-empty path' },
        { field: 'retries', message: expect.any(String) },
      ],
    })
  })

  it('names nested fields with dots and the object itself as "options"', () => {
    expect(
      caught(() => parseBackendOptions(schema, { root: 'r', nested: { replicas: 0 } }, 'Redis'))
        .context,
    ).toMatchObject({ field: 'nested.replicas' })
    expect(caught(() => parseBackendOptions(schema, 42, 'Redis')).context).toMatchObject({
      field: 'options',
    })
  })

  it('never echoes a value, whatever it holds', () => {
    const secret = 'Zq9Secret-p@ss/word'
    const error = caught(() =>
      parseBackendOptions(schema, { root: 'r', password: { secret }, extra: secret }, 'S3'),
    )
    expect(JSON.stringify({ message: error.message, context: error.context })).not.toContain(
      'Zq9Secret',
    )
  })
})

describe('invalidBackendUrl', () => {
  it('redacts the URL in the message and the context', () => {
    const error = invalidBackendUrl('Redis', 'redis://u:Zq9Secret@h:1/0', 'bad db')
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).toBe('Invalid Redis backend URL "redis://***@h:1/0": bad db')
    expect(error.context).toEqual({
      backend: 'Redis',
      field: 'url',
      url: 'redis://***@h:1/0',
      issues: [{ field: 'url', message: 'bad db' }],
    })
  })
})

describe('readUrlQuery', () => {
  const spec = { region: 'string', timeoutMs: 'integer', pathStyle: 'boolean' } as const
  const read = (query: string) =>
    readUrlQuery('S3', `s3://b?${query}`, new URLSearchParams(query), spec)

  it('reads each kind and leaves absent ones out', () => {
    expect(read('region=eu&timeoutMs=250&pathStyle=false')).toEqual({
      region: 'eu',
      timeoutMs: 250,
      pathStyle: false,
    })
    expect(read('')).toEqual({})
  })

  it.each([
    ['nope=1', 'unknown query parameter "nope"'],
    ['region=a&region=b', 'query parameter "region" is repeated'],
    ['timeoutMs=1.5', 'query parameter "timeoutMs" must be a non-negative integer'],
    ['timeoutMs=-1', 'query parameter "timeoutMs" must be a non-negative integer'],
    ['pathStyle=yes', 'query parameter "pathStyle" must be true or false'],
  ])('rejects %s', (query, problem) => {
    const error = caught(() => read(query))
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).toContain(problem)
  })

  it('does not treat inherited names as known', () => {
    expect(caught(() => read('toString=x')).message).toContain('unknown query parameter')
  })
})

describe('shared option schemas', () => {
  it('writerIdentitySchema applies the backends own writer rule', () => {
    expect(writerIdentitySchema.safeParse({ writerId: 'w', sessionId: 's' }).success).toBe(true)
    expect(writerIdentitySchema.safeParse({ writerId: '' }).success).toBe(false)
    expect(
      writerIdentitySchema.safeParse({ writerId: 'w', stageId: 'x'.repeat(257) }).success,
    ).toBe(false)
  })

  it('keyPrefixSchema refuses a trailing slash and backendSchema a non-backend', () => {
    expect(keyPrefixSchema.safeParse('keyv').success).toBe(true)
    expect(keyPrefixSchema.safeParse('keyv/').success).toBe(false)
    expect(backendSchema.safeParse({ contractVersion: 1 }).success).toBe(true)
    expect(backendSchema.safeParse({ contractVersion: 2 }).success).toBe(false)
  })

  it('parseOptions words errors for any subject', () => {
    const error = caught(() => parseOptions(schema, { root: '' }, 'Keyv store'))
    expect(error.message).toBe('Invalid Keyv store option root: root must be a non-empty path')
    expect(error.context).toEqual({
      field: 'root',
      issues: [{ field: 'root', message: 'root must be a non-empty path' }],
    })
  })
})
