import { describe, expect, it } from 'vitest'
import {
  AgentStateError,
  createRecordBackend,
  isAgentStateError,
  type RecordStore,
} from '../src/index.js'

/**
 * The paths of createRecordBackend that only a failing store reaches, so the contract suite (which
 * runs correct stores) never does: a store error other than a lost race fails the operation at
 * once, and a key that loses every race gives up with UNAVAILABLE after maxAttempts.
 */
function failingStore(writeError: () => Error): { store: RecordStore; writes: { count: number } } {
  const writes = { count: 0 }
  const store: RecordStore = {
    name: 'failing',
    capabilities: {
      durable: false,
      multiProcess: false,
      multiHost: false,
      maxKeyBytes: 1024,
      maxValueBytes: 1024,
    },
    async read() {
      return null
    },
    async write() {
      writes.count++
      throw writeError()
    },
    async scan() {
      return { records: [], done: true }
    },
    async close() {},
  }
  return { store, writes }
}

async function rejection(promise: Promise<unknown>): Promise<AgentStateError> {
  try {
    await promise
  } catch (error) {
    if (isAgentStateError(error)) return error
    throw error
  }
  throw new Error('resolved')
}

describe('createRecordBackend over a failing store', () => {
  it('fails the operation with the store error itself, without retrying, when it is not a lost race', async () => {
    const { store, writes } = failingStore(
      () => new AgentStateError('UNAVAILABLE', 'the disk went away'),
    )
    const error = await rejection(createRecordBackend(store).put('k', new Uint8Array([1])))
    expect(error.code).toBe('UNAVAILABLE')
    expect(error.message).toBe('the disk went away')
    expect(writes.count).toBe(1)
  })

  it('gives up with UNAVAILABLE after exactly maxAttempts lost races', async () => {
    const { store, writes } = failingStore(
      () => new AgentStateError('PRECONDITION_FAILED', 'record changed'),
    )
    const backend = createRecordBackend(store, { maxAttempts: 3 })
    const error = await rejection(backend.put('k', new Uint8Array([1])))
    expect(error.code).toBe('UNAVAILABLE')
    expect(error.message).toBe('Gave up on key "k" after 3 lost races')
    expect(error.context).toMatchObject({ key: 'k', attempts: 3, operation: 'conditional write' })
    expect(writes.count).toBe(3)
  })
})
