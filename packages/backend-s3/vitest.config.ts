import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: { conditions: ['@agent-state/source'] },
  ssr: { resolve: { conditions: ['@agent-state/source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    // One real RGW for the whole run, started here; a failure to start fails the run.
    globalSetup: ['test/global-setup.ts'],
    // The machine has 2 cores shared with RGW; keep test files sequential.
    fileParallelism: false,
  },
})
