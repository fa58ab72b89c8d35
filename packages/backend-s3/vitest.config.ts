import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: { conditions: ['@agent-state/source'] },
  ssr: { resolve: { conditions: ['@agent-state/source'] } },
  // The global setup runs in vitest's own `__vitest__` environment: it needs the
  // source condition too, to import @agent-state/test-services by name unbuilt.
  environments: { __vitest__: { resolve: { conditions: ['@agent-state/source'] } } },
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
