import { AgentStateError } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { CliError, EXIT } from '../src/exit-codes.js'
import { describeFailure, secretsOf } from '../src/failure.js'

describe('describeFailure: one line, no secrets, the right exit code', () => {
  it('maps codes to exit codes', () => {
    const code = (c: string) => describeFailure(new AgentStateError(c, 'x')).exitCode
    expect(code('NOT_FOUND')).toBe(EXIT.NOT_FOUND)
    expect(code('SESSION_NOT_FOUND')).toBe(EXIT.NOT_FOUND)
    expect(code('INVALID_KEY')).toBe(EXIT.USAGE)
    expect(code('UNAVAILABLE')).toBe(EXIT.UNAVAILABLE)
    expect(code('CORRUPT')).toBe(EXIT.FAILED)
    expect(describeFailure(new CliError('m', EXIT.USAGE))).toEqual({
      message: 'm',
      exitCode: EXIT.USAGE,
    })
  })

  it('removes the URL password and secret query values from any message, raw or decoded', () => {
    const url = 'redis://user:p%40ss-word@h:6379/0?token=tok-123456&db=1'
    expect(secretsOf(url)).toEqual(['p%40ss-word', 'p@ss-word', 'tok-123456'])
    const error = new AgentStateError(
      'UNAVAILABLE',
      'auth p@ss-word failed for redis://user:p%40ss-word@h:6379/0 with tok-123456',
    )
    const { message } = describeFailure(error, [url])
    expect(message).not.toMatch(/p@ss|p%40ss|tok-123456/)
    expect(message).toContain('redis://***@h:6379/0')
  })

  it('is one line with control characters escaped', () => {
    const { message } = describeFailure(new Error('first\n  second\u001b[31m'))
    expect(message).toBe('first second\\u001b[31m')
  })
})
