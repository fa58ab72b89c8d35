import { type Backend, isAgentStateError } from '@agent-state/core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { inspectRun, openRun, readEffect, resumeRun } from '../src/index.js'
import {
  canonicalJson,
  checksumOf,
  RUN_RECORD_SCHEMA_VERSION,
  runEffectKey,
  runHeadKey,
  runStepKey,
} from '../src/internal.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import { codeOf } from './error-code.js'
import { type Provider, paymentHandler, startProvider } from './provider.js'

let provider: Provider
beforeAll(async () => {
  provider = await startProvider()
})
afterAll(async () => {
  await provider.stop()
})

type Envelope = { schemaVersion: number; checksum: string; body: Record<string, unknown> }
const decoder = new TextDecoder()
const encoder = new TextEncoder()
const parse = (bytes: Uint8Array) => JSON.parse(decoder.decode(bytes)) as Envelope
const resealed = (envelope: Envelope) =>
  encoder.encode(canonicalJson({ ...envelope, checksum: checksumOf(envelope.body) }))

/** How each damage turns a valid record into a bad one. */
const DAMAGES: readonly {
  name: string
  code: string
  damage: (bytes: Uint8Array) => Uint8Array
}[] = [
  {
    name: 'not JSON',
    code: 'RUN_RECORD_CORRUPT',
    damage: (b) => b.slice(0, Math.floor(b.length / 2)),
  },
  {
    name: 'a body that fails its checksum',
    code: 'RUN_RECORD_CORRUPT',
    damage: (b) => {
      const e = parse(b)
      return encoder.encode(
        JSON.stringify({ ...e, body: { ...e.body, runId: `${String(e.body.runId)}x` } }),
      )
    },
  },
  {
    name: 'a resealed body that fails its schema',
    code: 'RUN_RECORD_CORRUPT',
    damage: (b) => {
      const e = parse(b)
      return resealed({ ...e, body: { ...e.body, unexpected: true } })
    },
  },
  {
    name: 'a newer schema version',
    code: 'RUN_RECORD_INCOMPATIBLE',
    damage: (b) =>
      encoder.encode(JSON.stringify({ ...parse(b), schemaVersion: RUN_RECORD_SCHEMA_VERSION + 1 })),
  },
]

describe.each(BACKENDS)('ledger integrity on $name', (factory) => {
  let fixture: BackendFixture
  let backend: Backend
  let n = 0
  beforeEach(() => {
    fixture = factory.setup()
    backend = fixture.create()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })
  const handlers = () => ({ pay: paymentHandler(provider.url) })

  /** A run with a confirmed effect `ok`, an unknown effect `lost` and one step; its leases released. */
  const seed = async (): Promise<string> => {
    const runId = `integrity-${++n}-${Date.now().toString(36)}`
    const run = await openRun(backend, runId, { handlers: handlers() })
    await run.effect('pay', 'ok', { amount: 1 })
    await run.commitStep('one', { ok: true }, { next: 'two' })
    await run.close()
    const broken = await openRun(backend, runId, {
      handlers: { pay: paymentHandler('http://127.0.0.1:1', { retrySafe: false }) },
    })
    expect(await codeOf(broken.effect('pay', 'lost', { amount: 2 }))).toBe('EFFECT_UNKNOWN')
    await broken.close()
    return runId
  }

  /** Overwrites a record as damage would (the run released all its leases at close). */
  const replace = async (key: string, bytes: Uint8Array) => {
    await backend.put(key, bytes)
    return bytes
  }

  const expectCode = async (
    promise: Promise<unknown>,
    code: string,
    key: string,
    bytes: Uint8Array,
  ) => {
    let caught: unknown
    try {
      await promise
    } catch (error) {
      caught = error
    }
    expect(isAgentStateError(caught) ? caught.code : caught).toBe(code)
    expect((caught as { context: { key?: string } }).context.key ?? key).toBe(key)
    // Nothing was repaired, rewritten or removed.
    expect(
      Buffer.from((await backend.get(key))?.value ?? new Uint8Array()).equals(Buffer.from(bytes)),
    ).toBe(true)
  }

  for (const { name, code, damage } of DAMAGES) {
    it(`a head record with ${name}: ${code}, bytes unchanged`, async () => {
      const runId = await seed()
      const key = runHeadKey(runId)
      const bytes = await replace(key, damage((await backend.get(key))?.value as Uint8Array))
      await expectCode(resumeRun(backend, runId, { handlers: handlers() }), code, key, bytes)
      await expectCode(inspectRun(backend, runId), code, key, bytes)
    })

    it(`an incomplete effect record with ${name}: ${code} at resume, bytes unchanged`, async () => {
      const runId = await seed()
      const key = runEffectKey(runId, 'lost')
      const bytes = await replace(key, damage((await backend.get(key))?.value as Uint8Array))
      await expectCode(resumeRun(backend, runId, { handlers: handlers() }), code, key, bytes)
    })

    it(`a confirmed effect record with ${name}: ${code} when it is called again, bytes unchanged`, async () => {
      const runId = await seed()
      const key = runEffectKey(runId, 'ok')
      const bytes = await replace(key, damage((await backend.get(key))?.value as Uint8Array))
      await expectCode(readEffect(backend, runId, 'ok'), code, key, bytes)
    })

    it(`a step record with ${name}: ${code}, bytes unchanged`, async () => {
      const runId = await seed()
      const key = runStepKey(runId, 1)
      const bytes = await replace(key, damage((await backend.get(key))?.value as Uint8Array))
      await expectCode(resumeRun(backend, runId, { handlers: handlers() }), code, key, bytes)
    })
  }

  it('contradictory records: RUN_RECORD_CONTRADICTORY, bytes unchanged', async () => {
    const runId = await seed()
    const key = runEffectKey(runId, 'ok')
    const original = (await backend.get(key))?.value as Uint8Array
    const e = parse(original)
    const cases = [
      // Both confirmed and failed.
      resealed({ ...e, body: { ...e.body, error: { message: 'declined', code: null } } }),
      // Written by an attempt newer than the run's newest: no backend's token reaches the largest
      // safe integer (Redis tokens carry a server-time floor in microseconds, ~1.7e15).
      resealed({ ...e, body: { ...e.body, token: Number.MAX_SAFE_INTEGER } }),
      // Another effect's record under this key.
      resealed({ ...e, body: { ...e.body, effectId: 'other' } }),
      // A step record where an effect record belongs.
      (await backend.get(runStepKey(runId, 1)))?.value as Uint8Array,
    ]
    for (const bytes of cases) {
      await replace(key, bytes)
      await expectCode(readEffect(backend, runId, 'ok'), 'RUN_RECORD_CONTRADICTORY', key, bytes)
    }
  })

  it('missing records: an incomplete effect or a step gone is RUN_RECORD_MISSING, never empty', async () => {
    const runId = await seed()
    await replace(runEffectKey(runId, 'lost'), new Uint8Array(0))
    await backend.delete(runEffectKey(runId, 'lost'))
    expect(await codeOf(resumeRun(backend, runId, { handlers: handlers() }))).toBe(
      'RUN_RECORD_MISSING',
    )
    const other = await seed()
    const run = await openRun(backend, other, {
      handlers: { pay: paymentHandler(provider.url, { retrySafe: false }) },
    }).catch((error: unknown) => error)
    expect(isAgentStateError(run, 'RUN_NEEDS_ATTENTION')).toBe(true)
    await replace(runStepKey(other, 1), new Uint8Array(0))
    await backend.delete(runStepKey(other, 1))
    await replace(runStepKey(other, 2), (await backend.get(runHeadKey(other)))?.value as Uint8Array)
    expect(await codeOf(inspectRun(backend, other))).toBe('RUN_RECORD_MISSING')
  })
})
