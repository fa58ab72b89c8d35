/**
 * Prebuilt child processes for the multi-process and crash tiers, when the suite runs from its
 * TypeScript sources (this workspace). Starting every child with `--import tsx` compiles and
 * resolves the sources again at each start-up, which was most of a short child's cost; here the
 * runner and the backend's child module are compiled once per test process into one bundle with
 * a shared copy of core (`@agent-state/child-bundles`, the same bundler as the other suites'
 * children), and children start with plain `node`. The children run the same sources; only their
 * compilation moved.
 *
 * `@agent-state/child-bundles` is private and only a dev dependency of this published package, so
 * it is imported lazily, and only from here: this runs only from the sources (the runner is a
 * `.ts` file, see child-process.ts), i.e. inside the workspace, where dev dependencies are
 * installed. A published install runs `dist/` and never reaches the import, so it neither needs
 * the bundler nor esbuild. (The bundler cannot live in this package for backend-targets to share:
 * it would become published API; and this package cannot depend on backend-targets, which
 * depends on the backends, whose tests depend on this suite.)
 */

import { join } from 'node:path'

/** A prebuilt runner and the backend's child module compiled with it. */
export interface ChildBundle {
  readonly runner: string
  readonly module: string
}

async function bundle(runnerTs: string, module: string): Promise<ChildBundle> {
  const { bundleEntries } = await import('@agent-state/child-bundles')
  // The runner keeps its name in the process's command line (`…/child-runner.mjs`), so tools
  // and tests that look for the suite's children by command line still find them.
  const outdir = await bundleEntries({ 'child-runner': runnerTs, module }, 'contract')
  return { runner: join(outdir, 'child-runner.mjs'), module: join(outdir, 'module.mjs') }
}

/**
 * The prebuilt runner for child module `module` (built once per test process and module).
 * `AGENT_STATE_CHILD_TSX=1` returns `undefined`: children then start through tsx as before.
 */
export function childBundle(runnerTs: string, module: string): Promise<ChildBundle> | undefined {
  if (process.env.AGENT_STATE_CHILD_TSX === '1') return undefined
  return bundle(runnerTs, module)
}
