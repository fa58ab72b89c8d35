import keyvTestSuite, { keyvIteratorTests } from '@keyv/test-suite'
import Keyv, { type KeyvOptions } from 'keyv'
import * as vitest from 'vitest'
import { createKeyvStore } from '../src/index.js'
import { BACKENDS, sharedBackend } from './backends.js'

/**
 * Keyv 5 wires `keyv.iterator` by itself only for adapters whose dialect is in
 * its hard-coded list; this is the one line the README tells users to add.
 */
class KeyvWithIterator extends Keyv {
  constructor(options: KeyvOptions) {
    super(options)
    const store = options.store as ReturnType<typeof createKeyvStore>
    this.iterator = this.generateIterator(store.iterator.bind(store))
  }
}

for (const factory of BACKENDS) {
  vitest.describe(`@keyv/test-suite on ${factory.name}`, () => {
    const shared = sharedBackend(factory)
    vitest.beforeAll(() => shared.open())
    vitest.afterAll(() => shared.close())
    // Every call is a new store on the same backend, as the suite expects of a factory.
    const store = () => createKeyvStore({ backend: shared.backend() })
    keyvTestSuite(vitest, Keyv, store)
    vitest.describe('iterator', () => {
      keyvIteratorTests(vitest, KeyvWithIterator as typeof Keyv, store)
    })
  })
}
