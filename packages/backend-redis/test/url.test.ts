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
    ['redis://h?commandTimeoutMs=-1', 'positive integer'],
    ['http://h', 'scheme'],
  ])('rejects %s', (url, problem) => {
    expect(() => parseRedisUrl(url)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }))
    expect(() => parseRedisUrl(url)).toThrow(problem)
  })

  it('never echoes the password in a URL error', () => {
    try {
      parseRedisUrl('redis://u:TopSecret1@h/notadb')
      expect.unreachable()
    } catch (error) {
      expect(String((error as Error).message)).not.toContain('TopSecret1')
      expect(JSON.stringify(error)).not.toContain('TopSecret1')
    }
  })

  it('rejects invalid options without connecting', () => {
    expect(() => createBackendFromUrl('redis://h?keyPrefix=bad%20prefix', {})).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
    expect(() => createBackendFromUrl('redis://h', { namespace: '.bad' })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
  })
})
