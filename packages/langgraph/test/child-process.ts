import { packageDir } from '@agent-state/backend-targets'

/** The package directory: children run there so `@agent-state/*` resolve as in the tests. */
export const PACKAGE_DIR = packageDir(import.meta.url)
