import type { Backend } from '@agent-state/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createDaemonQueue, openDaemonQueue } from '../src/index.js'
import { daemonEventKey } from '../src/internal.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import { watchOf } from './watch-of.js'

/** Wraps `inner` so that puts of keys matching `pattern` wait until `open()` is called. */
function gated(inner: Backend, pattern: RegExp) {
  let open!: () => void
  const gate = new Promise<void>((resolve) => {
    open = resolve
  })
  let arrived!: () => void
  const reached = new Promise<void>((resolve) => {
    arrived = resolve
  })
  const backend: Backend = {
    contractVersion: inner.contractVersion,
    name: `${inner.name}+gated`,
    capabilities: inner.capabilities,
    get: (key) => inner.get(key),
    head: (key) => inner.head(key),
    async put(key, value, options) {
      if (pattern.test(key)) {
        arrived()
        await gate
      }
      return inner.put(key, value, options)
    },
    delete: (key, options) => inner.delete(key, options),
    list: (options) => inner.list(options),
    acquireLease: (key, options) => inner.acquireLease(key, options),
    renewLease: (lease) => inner.renewLease(lease),
    releaseLease: (lease) => inner.releaseLease(lease),
    getLease: (key) => inner.getLease(key),
    ...watchOf(inner),
    close: () => inner.close(),
  }
  return { backend, open, reached }
}

describe.each(BACKENDS)('daemon queue races on $name', (factory) => {
  let fixture: BackendFixture
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  it('a producer that copies out an event after it was acknowledged removes the copy again', async () => {
    const queue = await createDaemonQueue(fixture.create(), 'slow-copy')
    await queue.trigger({ n: 0 })
    // Producer B stalls right before copying event 0 out of the tail record.
    const slow = gated(fixture.create(), /\/events\//)
    const producer = await openDaemonQueue(slow.backend, 'slow-copy')
    const pending = producer.trigger({ n: 1 })
    await slow.reached
    // Meanwhile the consumer takes event 0 straight from the tail record and acknowledges it.
    const delivery = await queue.claim()
    expect([delivery?.seq, delivery?.event]).toEqual([0, { n: 0 }])
    await delivery?.ack()
    slow.open()
    expect(await pending).toBe(1)
    // The late copy of the acknowledged event is gone; it is never delivered again.
    expect(await fixture.create().head(daemonEventKey('slow-copy', 0))).toBeNull()
    const next = await queue.claim()
    expect([next?.seq, next?.attempt, next?.event]).toEqual([1, 1, { n: 1 }])
    await next?.ack()
    expect(await queue.claim()).toBeNull()
  })
})
