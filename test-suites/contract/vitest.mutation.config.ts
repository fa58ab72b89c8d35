import { defineConfig } from 'vitest/config'

// The mutation run (`pnpm mutation`, stryker.config.mjs): only the contract suite on the memory
// backend and on core's record backend over the memory record store, and the record-store tier
// on the memory record store itself, so every surviving mutant is a hole in the contract suite
// itself, not one some other test happens to cover.
export default defineConfig({
  resolve: { conditions: ['@agent-state/source'] },
  ssr: { resolve: { conditions: ['@agent-state/source'] } },
  test: {
    include: ['test/memory.contract.test.ts', 'test/record-store.contract.test.ts'],
    testTimeout: 30_000,
  },
})
