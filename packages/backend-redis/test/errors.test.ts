import { describe, expect, it } from 'vitest'
import { mapRedisError, redactSecrets, sanitizeError } from '../src/errors.js'

/** Unit tests of the error mapping, with fake errors shaped like ioredis's (the only place fakes are used). */

function replyError(message: string): Error {
  const error = new Error(message)
  error.name = 'ReplyError'
  ;(error as unknown as { command: unknown }).command = {
    name: 'auth',
    args: ['default', 'hunter2'],
  }
  return error
}

function nodeError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code })
}

describe('mapRedisError', () => {
  const map = (error: unknown, phase: 'connect' | 'command' = 'command') =>
    mapRedisError(error, { operation: 'put', mayHaveApplied: phase === 'command' }, ['hunter2'])

  it('maps errors before sending to UNAVAILABLE', () => {
    expect(map(nodeError('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'), 'connect').code).toBe(
      'UNAVAILABLE',
    )
    expect(map(nodeError('getaddrinfo ENOTFOUND nohost', 'ENOTFOUND')).code).toBe('UNAVAILABLE')
    expect(
      map(new Error("Stream isn't writeable and enableOfflineQueue options is false")).code,
    ).toBe('UNAVAILABLE')
    expect(map(new Error("Cluster isn't ready and enableOfflineQueue options is false")).code).toBe(
      'UNAVAILABLE',
    )
    const allFailed = new Error('Failed to refresh slots cache.')
    allFailed.name = 'ClusterAllFailedError'
    expect(map(allFailed).code).toBe('UNAVAILABLE')
    expect(map(new Error('anything at all'), 'connect').code).toBe('UNAVAILABLE')
  })

  it('maps errors after sending to INDETERMINATE', () => {
    expect(map(new Error('Command timed out')).code).toBe('INDETERMINATE')
    expect(map(new Error('Connection is closed.')).code).toBe('INDETERMINATE')
    const maxRetries = new Error('Reached the max retries per request limit (which is 0).')
    maxRetries.name = 'MaxRetriesPerRequestError'
    expect(map(maxRetries).code).toBe('INDETERMINATE')
    expect(map(nodeError('read ECONNRESET', 'ECONNRESET')).code).toBe('INDETERMINATE')
    expect(map(new Error('Command timed out')).retryable).toBe(false)
  })

  it('maps server replies by their first word', () => {
    expect(map(replyError('LOADING Redis is loading the dataset in memory'))).toMatchObject({
      code: 'UNAVAILABLE',
      retryable: true,
    })
    expect(map(replyError('CLUSTERDOWN The cluster is down')).code).toBe('UNAVAILABLE')
    expect(map(replyError('READONLY You cannot write against a read only replica.')).code).toBe(
      'UNAVAILABLE',
    )
    expect(map(replyError('WRONGPASS invalid username-password pair'))).toMatchObject({
      code: 'UNAVAILABLE',
      retryable: false,
    })
    expect(map(replyError('NOAUTH Authentication required.')).retryable).toBe(false)
    expect(
      map(replyError('WRONGTYPE Operation against a key holding the wrong kind of value')).code,
    ).toBe('CORRUPT')
  })

  it('keeps a sanitized cause: no command arguments, no secrets', () => {
    const mapped = map(replyError('ERR something about hunter2'))
    const cause = mapped.cause as Error & { command?: unknown }
    expect(cause).toBeInstanceOf(Error)
    expect(cause.command).toBeUndefined()
    expect(cause.message).toBe('ERR something about ***')
    expect(mapped.message).not.toContain('hunter2')
    expect(JSON.stringify(mapped)).not.toContain('hunter2')
  })

  it('passes AgentStateErrors through unchanged', () => {
    const mapped = map(new Error('Command timed out'))
    expect(map(mapped)).toBe(mapped)
  })

  it('redacts every occurrence of every secret', () => {
    expect(redactSecrets('a pw b pw', ['pw', ''])).toBe('a *** b ***')
    expect(sanitizeError('plain string', []).message).toBe('plain string')
  })
})
