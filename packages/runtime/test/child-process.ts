import { packageDir, tsRunner } from '@agent-state/backend-targets'

/** The package directory: children run there so `@agent-state/*` resolve as in the tests. */
export const PACKAGE_DIR = packageDir(import.meta.url)

/**
 * Runs a TypeScript file in a child Node process (sources via tsx); resolves
 * its stdout. `env` is added to this process's environment (e.g. S3 credentials).
 */
export const runTs = tsRunner(PACKAGE_DIR)
