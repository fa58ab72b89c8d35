import { describe, expect, it } from 'vitest'
import { AgentStateError, isAgentStateError, openBackend, redactUrl } from '../src/index.js'

async function failure(promise: Promise<unknown>): Promise<AgentStateError> {
  try {
    await promise
  } catch (error) {
    if (isAgentStateError(error)) return error
    throw error
  }
  throw new Error('expected a failure')
}

describe('openBackend', () => {
  it('rejects an unknown scheme with INVALID_ARGUMENT, without echoing credentials', async () => {
    const error = await failure(openBackend('ftp://user:secret@host/x'))
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).not.toContain('secret')
    expect(JSON.stringify(error.context)).not.toContain('secret')
  })

  it('names the package to install when a backend package is missing', async () => {
    const error = await failure(
      openBackend('redis://localhost:6379', {
        importer: async () => {
          throw Object.assign(new Error('Cannot find package'), { code: 'ERR_MODULE_NOT_FOUND' })
        },
      }),
    )
    expect(error.code).toBe('UNSUPPORTED')
    expect(error.message).toContain('@agent-state/redis')
  })

  it('rejects an invalid namespace before loading anything', async () => {
    let loaded = false
    const error = await failure(
      openBackend('memory:', {
        namespace: '../escape',
        importer: async () => {
          loaded = true
          return {}
        },
      }),
    )
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(loaded).toBe(false)
  })

  it('passes the URL and options to the package', async () => {
    const seen: unknown[] = []
    await openBackend('sqlite:./x.db', {
      namespace: 'ns1',
      importer: async (name) => ({
        createBackendFromUrl: (url: string, options: unknown) => {
          seen.push(name, url, options)
          return {}
        },
      }),
    })
    expect(seen).toEqual(['@agent-state/sqlite', 'sqlite:./x.db', { namespace: 'ns1' }])
  })

  it('redacts user info from URLs', () => {
    expect(redactUrl('rediss://me:pa55@host:6380/2')).toBe('rediss://***@host:6380/2')
    expect(redactUrl('file:./x')).toBe('file:./x')
  })
})

describe('AgentStateError', () => {
  it('is recognised across copies by its Symbol.for marker', () => {
    const marker = Symbol.for('@agent-state/core/AgentStateError')
    const foreign = Object.assign(new Error('x'), { code: 'LEASE_LOST', [marker]: true })
    expect(isAgentStateError(foreign, 'LEASE_LOST')).toBe(true)
    expect(isAgentStateError(new Error('x'))).toBe(false)
  })

  it('defaults retryable by code', () => {
    expect(new AgentStateError('UNAVAILABLE', 'x').retryable).toBe(true)
    expect(new AgentStateError('INDETERMINATE', 'x').retryable).toBe(false)
  })
})
