import { describe, expect, it } from 'vitest'
import { createBackendFromUrl, parseRedisUrl } from '../src/index.js'

describe('parseRedisUrl', () => {
  it('reads host, port, db, user and percent-encoded password', () => {
    expect(parseRedisUrl('redis://alice:p%40ss%3Aw@example.com:6380/2')).toEqual({
      host: 'example.com',
      port: 6380,
      db: 2,
      username: 'alice',
      password: 'p@ss:w',
    })
    expect(parseRedisUrl('redis://:only-pw@h')).toEqual({
      host: 'h',
      port: 6379,
      password: 'only-pw',
    })
    expect(parseRedisUrl('redis://h:1/')).toEqual({ host: 'h', port: 1 })
  })

  it('turns rediss: into TLS', () => {
    expect(parseRedisUrl('rediss://h:6379')).toEqual({ host: 'h', port: 6379, tls: true })
  })

  it('reads cluster seed nodes', () => {
    expect(parseRedisUrl('redis://a:7000?cluster=1&nodes=b:7001,c:7002')).toEqual({
      host: 'a',
      port: 7000,
      cluster: {
        nodes: [
          { host: 'a', port: 7000 },
          { host: 'b', port: 7001 },
          { host: 'c', port: 7002 },
        ],
      },
    })
  })

  it('reads the Sentinel form: sentinels, master name, db, credentials and options', () => {
    expect(
      parseRedisUrl(
        'redis+sentinel://app:p%40ss@s1:26380,s2,[::1]:26381/mymaster/3?keyPrefix=k&commandTimeoutMs=250',
      ),
    ).toEqual({
      username: 'app',
      password: 'p@ss',
      db: 3,
      sentinel: {
        name: 'mymaster',
        nodes: [
          { host: 's1', port: 26380 },
          { host: 's2', port: 26379 },
          { host: '::1', port: 26381 },
        ],
      },
      keyPrefix: 'k',
      commandTimeoutMs: 250,
    })
    expect(parseRedisUrl('redis+sentinel://s1/m')).toEqual({
      sentinel: { name: 'm', nodes: [{ host: 's1', port: 26379 }] },
    })
  })

  it('reports URL errors in the one shape of every backend', () => {
    expect(() => parseRedisUrl('redis://u:Secret9@h?what=1')).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/^Invalid Redis backend URL "redis:\/\/\*\*\*@h\?what=1": /),
        context: expect.objectContaining({
          backend: 'Redis',
          field: 'url',
          url: 'redis://***@h?what=1',
        }),
      }),
    )
  })

  it('reads timeouts and key prefix', () => {
    expect(
      parseRedisUrl('redis://h?keyPrefix=app&connectTimeoutMs=100&commandTimeoutMs=200'),
    ).toEqual({
      host: 'h',
      port: 6379,
      keyPrefix: 'app',
      connectTimeoutMs: 100,
      commandTimeoutMs: 200,
    })
  })

  it.each([
    ['redis://h/abc', 'database number'],
    ['redis://h:99999', 'not a URL'],
    ['redis://h?cluster=1&nodes=b', 'host:port'],
    ['redis://h/1?cluster=1', 'only database 0'],
    ['redis://h?nodes=b:1', 'needs cluster=1'],
    ['redis://h?what=1', 'unknown query parameter'],
    ['redis://h?commandTimeoutMs=-1', 'non-negative integer'],
    ['redis://h?keyPrefix=a&keyPrefix=b', 'repeated'],
    ['redis://h?cluster=yes', 'cluster must be 1 or 0'],
    ['redis+sentinel://s1:26379', '/<master name>'],
    ['redis+sentinel://s1:26379/m/x', 'database number'],
    ['redis+sentinel://s1:26379/m/0/extra', '/<master name>'],
    ['redis+sentinel://s1:99999/m', 'bad port'],
    ['redis+sentinel://s1,/m', 'expected host:port'],
    ['redis+sentinel://s1/m?cluster=1', 'unknown query parameter'],
    ['http://h', 'scheme'],
  ])('rejects %s', (url, problem) => {
    expect(() => parseRedisUrl(url)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    expect(() => parseRedisUrl(url)).toThrow(problem)
  })

  function urlError(url: string): unknown {
    try {
      parseRedisUrl(url)
    } catch (error) {
      return error
    }
    // Outside the try, so a URL that parses fails the test instead of being swallowed.
    throw new Error(`expected ${url} to be rejected`)
  }

  it.each([
    'redis://u:TopSecret1@h/notadb',
    'redis://u:Top/Secret1@h:6379',
    'redis://u:Top#Secret1@h:6379',
    'redis://u:Top?Secret1@h:6379',
    'redis://u:Top@Secret1@h/notadb',
    'redis://u:Top%2FSecret1@h/notadb',
    'redis+sentinel://u:TopSecret1@s1,s2/m/notadb',
    'redis+sentinel://u:Top@Secret1@s1/m/notadb',
    'redis+sentinel://u:Top/Secret1@s1/m',
  ])('never echoes the password of %s in a URL error', (url) => {
    const error = urlError(url)
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(String((error as Error).message)).not.toContain('Secret1')
    expect(JSON.stringify(error)).not.toContain('Secret1')
    expect(JSON.stringify((error as { context?: unknown }).context)).not.toContain('Secret1')
  })

  it('never echoes a password holding any printable ASCII character, raw or encoded', () => {
    // The property test over random passwords is core's (redact-url.test.ts); this is the
    // redis parser's own end-to-end sweep of every character a URL treats specially.
    for (let c = 0x20; c < 0x7f; c++) {
      const password = `Zq9${String.fromCharCode(c)}Secret`
      for (const shown of [password, encodeURIComponent(password)]) {
        // An invalid database path makes every URL an error, whatever the password does to parsing.
        const error = urlError(`redis://user:${shown}@h:6379/notadb`)
        expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' })
        expect(String((error as Error).message)).not.toContain('Secret')
        expect(JSON.stringify((error as { context?: unknown }).context)).not.toContain('Secret')
      }
    }
  })

  it('rejects invalid options without connecting', async () => {
    // Port 1 on loopback has no server: reaching the connection would be UNAVAILABLE, not INVALID_ARGUMENT.
    await expect(
      createBackendFromUrl('redis://127.0.0.1:1?keyPrefix=bad%20prefix', {}),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(
      createBackendFromUrl('redis://127.0.0.1:1', { namespace: '.bad' }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
  })
})
