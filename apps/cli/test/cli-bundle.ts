/**
 * The command the tests run, built once per test run (test/global-setup.ts): the real
 * `bin/agent-state.js`, copied byte for byte next to a `dist/run.js` that is `src/run.ts`
 * bundled with esbuild (the compiler tsx itself runs on). The copied bin finds that `dist/`,
 * as it finds the package's own once built, and starts it in its own process group exactly as
 * users' `agent-state` does. Without this every one of the suite's few hundred CLI processes
 * starts the sources through tsx, resolving and compiling them anew (0.5 s and more each on a
 * loaded box). The bundle runs the same sources; only their compilation moved.
 *
 * It behaves as the sources do, not as a published `dist/`: every bundled workspace file keeps
 * its own `import.meta.url` (so `verify` hands vitest `src/verify-entry.contract.ts`, the demo
 * starts `src/demo/demo-agent.ts`, and the contract suite finds its child runner), and the
 * process gets what the bin's source branch gives the CLI: the `@agent-state/source` condition
 * and `AGENT_STATE_FROM_SOURCE=1` (see {@link cliEnvironment}).
 */
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { build, type Plugin, thirdPartyExternal } from '@agent-state/child-bundles'

/** What {@link buildCli} made. */
export interface CliBundle {
  /** The copy of `bin/agent-state.js` that runs the bundle. */
  readonly bin: string
  /** The test scripts of this folder (seeders), bundled the same way, by name without `.ts`. */
  readonly scripts: Readonly<Record<string, string>>
  /** Removes everything it wrote. */
  remove(): void
}

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url))

/** The scripts `runScript` starts (test/*.ts run as child processes). */
const SCRIPTS = [
  'backend-ops',
  'seed-readme-state',
  'seed-runs',
  'seed-state',
  'seed-ui',
  'seed-wakes',
]

/**
 * Each bundled workspace file keeps the `import.meta.url` of its source file: the CLI finds
 * the files it hands to other processes (the verify entry, the demo's agents, the contract's
 * child runner) next to its sources, as when it runs from them.
 */
const sourceUrls: Plugin = {
  name: 'source-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes('/node_modules/')) return undefined
      const source = readFileSync(args.path, 'utf8')
      const url = JSON.stringify(pathToFileURL(args.path).href)
      return { contents: source.replace(/\bimport\.meta\.url\b/g, url), loader: 'ts' }
    })
  },
}

/**
 * Bundles `src/run.ts` (and the seed scripts) from the current sources and lays out the copy of
 * the bin that runs it. Under the package's `node_modules/.cache`, so that what the CLI resolves
 * from its own location at run time (`import.meta.resolve('tsx')`) resolves as from `src/`.
 */
export async function buildCli(): Promise<CliBundle> {
  const cache = join(PACKAGE_DIR, 'node_modules', '.cache')
  mkdirSync(cache, { recursive: true })
  const root = mkdtempSync(join(cache, 'agent-state-cli-test-'))
  const remove = () => rmSync(root, { recursive: true, force: true })
  try {
    const bin = join(root, 'bin', 'agent-state.js')
    mkdirSync(join(root, 'bin'))
    copyFileSync(join(PACKAGE_DIR, 'bin', 'agent-state.js'), bin)
    chmodSync(bin, 0o755)
    const entryPoints: Record<string, string> = { run: join(PACKAGE_DIR, 'src', 'run.ts') }
    for (const name of SCRIPTS) entryPoints[name] = join(PACKAGE_DIR, 'test', `${name}.ts`)
    const result = await build({
      entryPoints,
      outdir: join(root, 'dist'),
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      conditions: ['@agent-state/source'],
      // A CommonJS package's `main`, as Node's own resolution picks for a package without exports.
      mainFields: ['main'],
      logLevel: 'silent',
      plugins: [thirdPartyExternal, sourceUrls],
    })
    if (result.errors.length > 0)
      throw new Error(`cannot bundle the CLI: ${result.errors[0]?.text}`)
    const scripts = Object.fromEntries(
      SCRIPTS.map((name) => [name, join(root, 'dist', `${name}.js`)]),
    )
    return { bin, scripts, remove }
  } catch (error) {
    remove()
    throw error
  }
}

/**
 * The environment the bundle runs with: what the bin's source branch gives the CLI process
 * (the `@agent-state/source` condition, for what it loads at run time, such as a `--module`
 * TypeScript file's imports; `AGENT_STATE_FROM_SOURCE=1`, so `verify` runs the contract suite
 * from the sources), on top of `env`.
 */
export function cliEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const options = [env.NODE_OPTIONS, '--conditions=@agent-state/source'].filter(Boolean)
  return { ...env, NODE_OPTIONS: options.join(' '), AGENT_STATE_FROM_SOURCE: '1' }
}
