// @ts-check
/**
 * Mutation testing of the contract suite (`npx -y pnpm@12.4.2 mutation`): StrykerJS mutates the
 * memory backend and core's record backend, lease and listing code, and runs only the contract
 * suite (test-suites/contract/vitest.mutation.config.ts) against each mutant. A mutant that
 * survives is a behaviour change the suite does not notice. The summary of the latest run is
 * test-suites/contract/mutation-summary.md (`node scripts/mutation-summary.mjs`), the argument
 * for each survivor test-suites/contract/mutation-testing.md; the run is not part of .ci/run.
 *
 * In place: the workspace packages resolve each other through pnpm's symlinks to their
 * `src/`, so a sandbox copy would test the unmutated originals. Stryker restores the files when
 * the run ends; run it in a clean checkout, and never commit while it runs.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'vitest',
  vitest: {
    configFile: 'test-suites/contract/vitest.mutation.config.ts',
    dir: 'test-suites/contract',
  },
  plugins: ['@stryker-mutator/vitest-runner'],
  mutate: [
    'packages/backend-memory/src/memory-backend.ts',
    'packages/backend-memory/src/memory-store.ts',
    'packages/backend-memory/src/memory-record-store.ts',
    'packages/core/src/record-backend.ts',
    'packages/core/src/put-state-cache.ts',
    // The contract's rules (leases, preconditions, versions' revision), not the random suffix pool.
    'packages/core/src/key-state.ts:74-250',
    'packages/core/src/list-page.ts',
    'packages/core/src/cursor.ts',
  ],
  inPlace: true,
  coverageAnalysis: 'perTest',
  // Mutants in code run at module load (constants) would need every test: leave them out.
  ignoreStatic: true,
  // Two workers: the machine has two cores (`--concurrency N` overrides).
  concurrency: 2,
  timeoutMS: 20_000,
  reporters: ['clear-text', 'progress', 'json'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: 'reports/mutation/.stryker-tmp',
  cleanTempDir: 'always',
}
