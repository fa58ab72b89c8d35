import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: { conditions: ['@agent-state/source'] },
  ssr: { resolve: { conditions: ['@agent-state/source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // One private redis-server and one Ceph RGW for the whole run; a failure to start fails the run.
    globalSetup: ['test/global-setup.ts'],
  },
})
