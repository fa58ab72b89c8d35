import { packageConfig } from '../../vitest.shared.js'

/** `REDIS_TEST_WORKERS`: how many test files run side by side; unset, vitest's default. */
const workers = process.env.REDIS_TEST_WORKERS

export default packageConfig({
  test: {
    // Tried: 2 or 4 files at once on 2 shared cores (load 20-40) made the three contract crash
    // tiers (each spawning 50 child processes) outrun their 300 s limit, so the default stays
    // vitest's; a machine with spare cores can raise it.
    ...(workers === undefined || workers === '' ? {} : { maxWorkers: Number(workers) }),
  },
})
