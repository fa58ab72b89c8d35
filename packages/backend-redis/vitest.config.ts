import { defineConfig } from 'vitest/config'

/** `REDIS_TEST_WORKERS`: how many test files run side by side; unset, vitest's default. */
const workers = process.env.REDIS_TEST_WORKERS

export default defineConfig({
  resolve: { conditions: ['@agent-state/source'] },
  ssr: { resolve: { conditions: ['@agent-state/source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    // Tried: 2 or 4 files at once on 2 shared cores (load 20-40) made the three contract crash
    // tiers (each spawning 50 child processes) outrun their 300 s limit, so the default stays
    // vitest's; a machine with spare cores can raise it.
    ...(workers === undefined || workers === '' ? {} : { maxWorkers: Number(workers) }),
  },
})
