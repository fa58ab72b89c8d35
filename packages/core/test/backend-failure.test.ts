import { describe, expect, it } from 'vitest'
import {
  AgentStateError,
  type BackendFailureOptions,
  backendFailure,
  recordChanged,
} from '../src/index.js'

/** What a backend's classification table relies on; `[]` when `make` honours all of it. */
function contractProblems(make: (options: BackendFailureOptions) => AgentStateError): string[] {
  const cause = new Error('socket hang up')
  const problems: string[] = []
  const base = { operation: 'put', message: 'put failed', cause }
  const sent = make({ ...base, mayHaveApplied: true })
  if (sent.code !== 'INDETERMINATE' || sent.retryable) problems.push('may-have-applied')
  const unsent = make({ ...base, mayHaveApplied: false })
  if (unsent.code !== 'UNAVAILABLE' || !unsent.retryable) problems.push('nothing-applied')
  const corrupt = make({ ...base, mayHaveApplied: true, code: 'CORRUPT' })
  if (corrupt.code !== 'CORRUPT') problems.push('table code')
  const fatal = make({ ...base, mayHaveApplied: false, retryable: false })
  if (fatal.retryable) problems.push('retryable')
  const detailed = make({ ...base, mayHaveApplied: false, context: { key: 'k' } })
  if (detailed.context.operation !== 'put' || detailed.context.key !== 'k') problems.push('context')
  if (detailed.cause !== cause || detailed.message !== 'put failed') problems.push('cause/message')
  return problems
}

describe('backendFailure', () => {
  it('answers "could it have applied?" with INDETERMINATE or UNAVAILABLE, and keeps the rest', () => {
    expect(contractProblems(backendFailure)).toEqual([])
    const refined = new AgentStateError('UNAVAILABLE', 'inner')
    expect(
      backendFailure({ operation: 'write', mayHaveApplied: true, message: 'm', cause: refined })
        .cause,
    ).toBe(refined)
  })

  it('mutant: ignoring mayHaveApplied (every failure UNAVAILABLE) is caught', () => {
    const mutant = (options: BackendFailureOptions) =>
      backendFailure({ ...options, mayHaveApplied: false })
    expect(contractProblems(mutant)).toEqual(['may-have-applied'])
  })

  it('mutant: dropping the context the table gives is caught', () => {
    const mutant = ({ context: _dropped, ...options }: BackendFailureOptions) =>
      backendFailure(options)
    expect(contractProblems(mutant)).toEqual(['context'])
  })
})

describe('recordChanged', () => {
  it('is the PRECONDITION_FAILED createRecordBackend retries on, with the key escaped', () => {
    const error = recordChanged('a/\u202e')
    expect(error).toMatchObject({ code: 'PRECONDITION_FAILED', context: { key: 'a/\u202e' } })
    expect(error.message).toBe('Record of "a/\\u202e" changed')
  })
})
