import { packageConfig } from '../../vitest.shared.js'

export default packageConfig({
  test: {
    // @langchain/langgraph-checkpoint-validation's specs use vitest's globals
    // (describe, it, expect, ...), as its own CLI runs them (`globals: true`).
    globals: true,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // One private redis-server and one Ceph RGW for the whole run; a failure to start fails the run.
    globalSetup: ['test/global-setup.ts'],
  },
})
