import { packageConfig } from '../../vitest.shared.js'

export default packageConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // One real RGW for the whole run, started here; a failure to start fails the run.
    globalSetup: ['test/global-setup.ts'],
    // The machine has 2 cores shared with RGW; keep test files sequential.
    fileParallelism: false,
  },
})
