import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { AgentStateError, openBackend, redactUrl } from '../src/index.js'

// A marker no host, path or message text contains, so "not shown" is a plain substring test.
const MARK = 'Zq9Secret'

describe('redactUrl', () => {
  it.each([
    ['redis://u:pa/ss@h:6379', 'redis://***@h:6379'],
    ['s3://AKID:se/cret@bucket/prefix?region=r', 's3://***@bucket/prefix?region=r'],
    ['redis://u:pa#ss@h:6379/0', 'redis://***@h:6379/0'],
    ['redis://u:pa?ss@h:6379/0', 'redis://***@h:6379/0'],
    ['redis://u:p@ss@h:6379/0', 'redis://***@h:6379/0'],
    ['redis://u:p%40ss%2F@h', 'redis://***@h'],
    ['rediss://me:pa55@host:6380/2', 'rediss://***@host:6380/2'],
    ['redis://:only-password@h', 'redis://***@h'],
    ['redis://user-only@h', 'redis://***@h'],
    ['REDIS://u:x@h', 'REDIS://***@h'],
    ['  redis://u:x@h', '  redis://***@h'],
    ['s3://b/p?endpoint=http://AKID:secret@host:7480', 's3://***@host:7480'],
    ['u:secret@h:6379', 'u:***@h:6379'],
    ['file://u:secret@host/x', 'file://***@host/x'],
  ])('hides the user info of %s', (url, shown) => {
    expect(redactUrl(url)).toBe(shown)
  })

  it.each([
    'file:./x',
    'file:./pnpm/foo@1.0.0/state',
    'sqlite:./a@b.db',
    'memory:',
    'redis://h:6379/0',
    's3://bucket/prefix?endpoint=http://127.0.0.1:7480',
  ])('leaves %s without credentials as it is', (url) => {
    expect(redactUrl(url)).toBe(url)
  })

  it('hides every generated password, raw or percent-encoded, in every scheme', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('redis', 'rediss', 's3', 'ftp', 'file', 'http'),
        fc.string({ unit: 'binary', maxLength: 12 }),
        fc.string({ unit: 'binary', maxLength: 40 }),
        fc.boolean(),
        fc.constantFrom('', ':6379', ':6379/0', '/prefix?region=eu', '/p#frag'),
        (scheme, user, rest, encode, tail) => {
          const password = `${MARK}${rest}`
          const shownPassword = encode ? encodeURIComponent(password) : password
          const shownUser = encode ? encodeURIComponent(user) : user
          const url = `${scheme}://${shownUser}:${shownPassword}@host.example${tail}`
          const redacted = redactUrl(url)
          expect(redacted).toBe(`${scheme}://***@host.example${tail}`)
          expect(redacted).not.toContain(MARK)
        },
      ),
      { numRuns: 500 },
    )
  })

  it('keeps credentials out of the openBackend error for an unknown scheme', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 30 }), async (rest) => {
        const url = `ftp://user:${MARK}${rest}@host/x`
        let caught: unknown
        try {
          await openBackend(url)
        } catch (error) {
          caught = error
        }
        expect(caught).toBeInstanceOf(AgentStateError)
        expect((caught as AgentStateError).code).toBe('INVALID_ARGUMENT')
        expect((caught as AgentStateError).message).not.toContain(MARK)
        expect(JSON.stringify((caught as AgentStateError).context)).not.toContain(MARK)
      }),
      { numRuns: 200 },
    )
  })
})
