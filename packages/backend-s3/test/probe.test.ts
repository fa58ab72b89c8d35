import { createManualClock, isAgentStateError } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { createS3Backend } from '../src/index.js'
import { type FakeS3, startFakeS3 } from './fake-s3.js'

const credentials = { accessKeyId: 'fake-access-key', secretAccessKey: 'fake-secret-key' }
const value = new TextEncoder().encode('x')

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise
  } catch (error) {
    if (isAgentStateError(error)) return { code: error.code, message: error.message }
    throw error
  }
  return { code: 'resolved', message: '' }
}

/**
 * Runs `check` on a backend against a fake server that enforces only the
 * given preconditions, then closes both.
 */
async function againstFake(
  enforced: { ifNoneMatch: boolean; ifMatch: boolean },
  check: (backend: ReturnType<typeof createS3Backend>, fake: FakeS3) => Promise<void>,
): Promise<void> {
  const fake = await startFakeS3(enforced)
  const backend = createS3Backend({
    bucket: 'fake-bucket',
    endpoint: fake.endpoint,
    forcePathStyle: true,
    credentials,
    namespace: 'probe-ns',
    clock: createManualClock().now,
  })
  try {
    await check(backend, fake)
  } finally {
    await backend.close()
    await fake.stop()
  }
}

// The only test against a fake: a real server that ignores preconditions is not at hand.
describe('start-up probe against a server that ignores preconditions', () => {
  it('refuses writes and leases with UNSUPPORTED naming If-None-Match', async () => {
    await againstFake({ ifNoneMatch: false, ifMatch: false }, async (backend, fake) => {
      const put = await failure(backend.put('k', value))
      expect(put.code).toBe('UNSUPPORTED')
      expect(put.message).toContain('ignores If-None-Match')
      const lease = await failure(backend.acquireLease('k', { holder: 'h', ttlMs: 1000 }))
      expect(lease.code).toBe('UNSUPPORTED')
      expect(await failure(backend.delete('k'))).toMatchObject({ code: 'resolved' })
      // Nothing was written but the probe object, which it removed again.
      expect([...fake.objects.keys()]).toEqual([])
      // Reads do not need preconditions and still work.
      expect(await backend.get('k')).toBeNull()
    })
  })

  it('refuses writes naming If-Match when only If-None-Match is enforced', async () => {
    await againstFake({ ifNoneMatch: true, ifMatch: false }, async (backend) => {
      const put = await failure(backend.put('k', value, { ifNoneMatch: '*' }))
      expect(put.code).toBe('UNSUPPORTED')
      expect(put.message).toContain('ignores If-Match')
    })
  })

  it('accepts a server that enforces both (the fake is honest here)', async () => {
    await againstFake({ ifNoneMatch: true, ifMatch: true }, async (backend) => {
      const meta = await backend.put('k', value)
      expect((await backend.head('k'))?.version).toBe(meta.version)
    })
  })
})
