import { defineConfig, mergeConfig, type ViteUserConfig } from 'vitest/config'

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
