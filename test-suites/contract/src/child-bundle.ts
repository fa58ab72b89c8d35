/**
 * Prebuilt child processes for the multi-process and crash tiers, when the suite runs from its
 * TypeScript sources (this workspace). Starting every child with `--import tsx` compiles and
 * resolves the sources again at each start-up, which was most of a short child's cost; here the
 * runner and the backend's child module are compiled once per test process (esbuild, the
 * compiler tsx itself runs on) into one bundle with a shared copy of core, and children start
 * with plain `node`. The children run the same sources; only their compilation moved.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** A prebuilt runner and the backend's child module compiled with it. */
export interface ChildBundle {
  readonly runner: string
  readonly module: string
}

interface ResolveResult {
  readonly path: string
  readonly errors: readonly unknown[]
}
interface PluginBuild {
  onResolve(
    options: { filter: RegExp },
    callback: (args: {
      path: string
      kind: string
      importer: string
      resolveDir: string
      pluginData?: unknown
    }) => Promise<object | undefined>,
  ): void
  resolve(path: string, options: object): Promise<ResolveResult>
}
interface Esbuild {
  build(options: object): Promise<{ errors: ReadonlyArray<{ text: string }> }>
}

const bundles = new Map<string, Promise<ChildBundle>>()
let outRoot: string | undefined

/** esbuild as tsx (a peer of this suite) depends on it. */
async function esbuild(): Promise<Esbuild> {
  const require = createRequire(import.meta.url)
  const fromTsx = createRequire(require.resolve('tsx'))
  const loaded = (await import(pathToFileURL(fromTsx.resolve('esbuild')).href)) as {
    default?: Esbuild
  } & Esbuild
  return loaded.default ?? loaded
}

function outputRoot(): string {
  if (outRoot === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'agent-state-contract-children-'))
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
    outRoot = dir
  }
  return outRoot
}

/**
 * Third-party packages stay out of the bundle, imported by the absolute path of the file Node
 * would load (native addons keep their own files; one instance each). Workspace TypeScript
 * (`@agent-state/*` and relative imports) is bundled.
 */
const thirdPartyExternal = {
  name: 'third-party-external',
  setup(b: PluginBuild) {
    b.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.path.startsWith('@agent-state/') || args.pluginData === 'inner') return undefined
      if (args.path.startsWith('node:')) return { path: args.path, external: true }
      const resolved = await b.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: 'inner',
      })
      if (resolved.errors.length > 0) return { errors: resolved.errors }
      return { path: resolved.path, external: true }
    })
  },
}

async function bundle(runnerTs: string, module: string): Promise<ChildBundle> {
  const outdir = mkdtempSync(join(outputRoot(), 'bundle-'))
  const { build } = await esbuild()
  const result = await build({
    // The runner keeps its name in the process's command line (`…/child-runner.mjs`), so tools
    // and tests that look for the suite's children by command line still find them.
    entryPoints: { 'child-runner': runnerTs, module },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outExtension: { '.js': '.mjs' },
    conditions: ['@agent-state/source'],
    // A CommonJS package's `main`, as Node's own resolution picks for a package without exports.
    mainFields: ['main'],
    sourcemap: 'inline',
    logLevel: 'silent',
    plugins: [thirdPartyExternal],
  })
  if (result.errors.length > 0)
    throw new Error(`cannot bundle ${module}: ${result.errors[0]?.text}`)
  return { runner: join(outdir, 'child-runner.mjs'), module: join(outdir, 'module.mjs') }
}

/**
 * The prebuilt runner for child module `module` (built once per test process and module).
 * `AGENT_STATE_CHILD_TSX=1` returns `undefined`: children then start through tsx as before.
 */
export function childBundle(runnerTs: string, module: string): Promise<ChildBundle> | undefined {
  if (process.env.AGENT_STATE_CHILD_TSX === '1') return undefined
  let built = bundles.get(module)
  if (built === undefined) {
    built = bundle(runnerTs, module)
    bundles.set(module, built)
    built.catch(() => bundles.delete(module))
  }
  return built
}
