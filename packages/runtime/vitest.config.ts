import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: { conditions: ['@agent-state/source'] },
  ssr: { resolve: { conditions: ['@agent-state/source'] } },
  // The global setup runs in vitest's own `__vitest__` environment: it needs the
  // source condition too, to import the workspace's test packages by name unbuilt.
  environments: { __vitest__: { resolve: { conditions: ['@agent-state/source'] } } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // One private redis-server and one Ceph RGW for the whole run; a failure to start fails the run.
    globalSetup: ['test/global-setup.ts'],
  },
})
