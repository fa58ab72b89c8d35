import { defineConfig, mergeConfig, type ViteUserConfig } from 'vitest/config'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/** The export condition under which workspace packages resolve to their TypeScript sources. */
const SOURCE = ['@agent-state/source']

/**
 * What every workspace package's vitest run shares: workspace packages
 * resolve from source through the `@agent-state/source` export condition (so
 * tests need no build), in the test files, the SSR transform and vitest's own
 * `__vitest__` environment (where a global setup runs, importing the test
 * packages by name); test files are `test/**\/*.test.ts`; a test may take 30 s.
 */
export const sharedConfig = defineConfig({
  resolve: { conditions: SOURCE },
  ssr: { resolve: { conditions: SOURCE } },
  environments: { __vitest__: { resolve: { conditions: SOURCE } } },
  test: { include: ['test/**/*.test.ts'], testTimeout: 30_000 },
})

/**
 * A package's vitest configuration: {@link sharedConfig} with the package's
 * own differences (timeouts, a global setup, how many files run at once)
 * merged over it. Arrays concatenate (vite's `mergeConfig`), so a package
 * adds a global setup but cannot drop the shared `include`.
 *
 * @example
 * ```ts
 * // packages/x/vitest.config.ts
 * export default packageConfig({ test: { testTimeout: 60_000 } })
 * ```
 */
export function packageConfig(own: ViteUserConfig = {}): ViteUserConfig {
  return mergeConfig(sharedConfig, own)
}

/**
 * A test sequencer that starts the files named in `longest` first, in that order, then the
 * others in vitest's own order. Vitest orders by the durations it cached from earlier runs, and
 * without them (a fresh clone, CI) by file size, which can leave a package's longest file to
 * start last and the run waiting on it alone. `longest` names files by their path under the
 * package (`test/verify.test.ts`), longest first, from a measured run.
 *
 * @example
 * ```ts
 * export default packageConfig({
 *   test: { sequence: { sequencer: longestFirst(['test/crash.test.ts']) } },
 * })
 * ```
 */
export function longestFirst(longest: readonly string[]): typeof BaseSequencer {
  return class LongestFirstSequencer extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const sorted = await super.sort(files)
      const rank = (file: TestSpecification): number => {
        const at = longest.findIndex((name) => file.moduleId.endsWith(`/${name}`))
        return at === -1 ? longest.length : at
      }
      // Array sort is stable: files not named keep vitest's order after the named ones.
      return [...sorted].sort((a, b) => rank(a) - rank(b))
    }
  }
}
