import { relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import {
  type AgentStateError,
  isAgentStateError,
  openBackend,
  registerBackendScheme,
  registeredBackendSchemes,
  unregisterBackendScheme,
} from '../src/index.js'

const fixture = fileURLToPath(new URL('./fixtures/third-party-backend.mjs', import.meta.url))
const notBackend = fileURLToPath(new URL('./fixtures/not-a-backend.mjs', import.meta.url))

async function failure(work: Promise<unknown> | (() => unknown)): Promise<AgentStateError> {
  try {
    await (typeof work === 'function' ? work() : work)
  } catch (error) {
    if (isAgentStateError(error)) return error
    throw error
  }
  throw new Error('expected a failure')
}

afterEach(() => {
  for (const scheme of Object.keys(registeredBackendSchemes())) unregisterBackendScheme(scheme)
})

describe('third-party schemes', () => {
  it('opens a registered scheme from a module file, passing the URL and options', async () => {
    registerBackendScheme('acme:', fixture)
    const backend = (await openBackend('acme:./data?x=1', { namespace: 'ns1' })) as unknown
    expect(backend).toEqual({
      name: 'third-party-fixture',
      url: 'acme:./data?x=1',
      options: { namespace: 'ns1' },
    })
  })

  it('takes per-call schemes as a relative path, a file URL or over a registration', async () => {
    const rel = `./${relative(process.cwd(), fixture)}`
    const viaPath = (await openBackend('acme:x', { schemes: { 'acme:': rel } })) as { name: string }
    expect(viaPath.name).toBe('third-party-fixture')
    const href = pathToFileURL(fixture).href
    const viaUrl = (await openBackend('acme:x', { schemes: { 'acme:': href } })) as { name: string }
    expect(viaUrl.name).toBe('third-party-fixture')
    registerBackendScheme('acme:', notBackend)
    const own = (await openBackend('acme:x', { schemes: { 'acme:': fixture } })) as { name: string }
    expect(own.name).toBe('third-party-fixture')
  })

  it('imports nothing when registering: a missing module fails at open, naming it', async () => {
    const missing = '/nonexistent/agent-state-backend.mjs'
    registerBackendScheme('gone:', missing)
    const error = await failure(openBackend('gone:x'))
    expect(error.code).toBe('UNSUPPORTED')
    expect(error.message).toContain(`The gone: backend's module ${missing} could not be loaded`)
  })

  it('names the package to install for a missing third-party package', async () => {
    registerBackendScheme('lmdb:', '@acme/agent-state-lmdb-not-installed')
    const error = await failure(openBackend('lmdb:./x'))
    expect(error.code).toBe('UNSUPPORTED')
    expect(error.message).toContain('which is not installed: install it to use lmdb: URLs')
  })

  it('refuses a module without createBackendFromUrl with UNSUPPORTED', async () => {
    const error = await failure(openBackend('acme:x', { schemes: { 'acme:': notBackend } }))
    expect(error.code).toBe('UNSUPPORTED')
    expect(error.message).toContain('does not export createBackendFromUrl')
  })

  it('refuses built-in, malformed and conflicting registrations with INVALID_ARGUMENT', async () => {
    for (const scheme of ['memory:', 'redis:', 'ACME:', 'acme', '1x:', '']) {
      const error = await failure(() => registerBackendScheme(scheme, fixture))
      expect(error.code, scheme).toBe('INVALID_ARGUMENT')
    }
    expect((await failure(() => registerBackendScheme('acme:', ' '))).code).toBe('INVALID_ARGUMENT')
    registerBackendScheme('acme:', fixture)
    registerBackendScheme('acme:', fixture)
    const conflict = await failure(() => registerBackendScheme('acme:', notBackend))
    expect(conflict.code).toBe('INVALID_ARGUMENT')
    expect(conflict.message).toContain('already registered')
    expect(unregisterBackendScheme('acme:')).toBe(true)
    registerBackendScheme('acme:', notBackend)
    const remap = await failure(openBackend('memory:', { schemes: { 'memory:': fixture } }))
    expect(remap.code).toBe('INVALID_ARGUMENT')
  })

  it('lists registered schemes in the unknown-scheme error', async () => {
    registerBackendScheme('acme:', fixture)
    const error = await failure(openBackend('nope:x'))
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).toContain('acme:')
    expect(error.message).toContain('memory:')
  })

  it('shares registrations across copies of core through globalThis', () => {
    registerBackendScheme('acme:', fixture)
    const shared = (globalThis as Record<symbol, unknown>)[
      Symbol.for('@agent-state/core/backend-schemes')
    ] as Map<string, string>
    expect(shared.get('acme:')).toBe(fixture)
  })
})
