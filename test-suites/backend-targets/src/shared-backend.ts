import type { Backend } from '@agent-state/core'
import { afterAll, beforeAll, describe } from 'vitest'
import type { BackendFactory, BackendFixture } from './backends.js'

/**
 * One backend instance shared by a group of tests: opened before them
 * (`open`, in a `beforeAll`), closed with its storage removed after them
 * (`close`, in an `afterAll`).
 */
export interface SharedBackend {
  /** The backend factory this instance comes from. */
  readonly factory: BackendFactory
  /** Sets up the factory's storage and creates the instance. */
  open(): void
  /** The instance; throws when {@link SharedBackend.open} has not run (a setup that failed). */
  backend(): Backend
  /** Closes every instance of the fixture and removes its storage; nothing when never opened. */
  close(): Promise<void>
}

/** A {@link SharedBackend} of `factory`, for suites that register their own hooks (LangGraph's `validate`). */
export function sharedBackend(factory: BackendFactory): SharedBackend {
  let fixture: BackendFixture | undefined
  let instance: Backend | undefined
  return {
    factory,
    open() {
      fixture = factory.setup()
      instance = fixture.create()
    },
    backend() {
      if (instance === undefined)
        throw new Error(`the ${factory.name} backend fixture was not set up`)
      return instance
    },
    async close() {
      await fixture?.cleanup()
    },
  }
}

/**
 * The adapters' loop over every backend: for each factory, a `describe`
 * titled `title(factory.name)` whose tests share one backend instance
 * (opened in its `beforeAll`, closed and its storage removed in its
 * `afterAll`). `body` registers the tests; it reads the instance through
 * `shared.backend()` inside them.
 *
 * @example
 * ```ts
 * describeEachBackend(BACKENDS, (name) => `Keyv store on ${name}`, (shared) => {
 *   it('stores', async () => { await shared.backend().put('k', bytes) })
 * })
 * ```
 */
export function describeEachBackend(
  factories: readonly BackendFactory[],
  title: (name: string) => string,
  body: (shared: SharedBackend) => void,
): void {
  for (const factory of factories) {
    describe(title(factory.name), () => {
      const shared = sharedBackend(factory)
      beforeAll(() => shared.open())
      afterAll(() => shared.close())
      body(shared)
    })
  }
}
