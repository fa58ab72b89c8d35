import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { build, type Plugin } from 'esbuild'
import { processOutputRoot } from './output-root.js'

const bundles = new Map<string, Promise<string>>()

/**
 * Leaves third-party packages out of the bundle, as the absolute path of the file Node itself
 * would load: they are plain JavaScript (native addons among them), and loading them unbundled
 * keeps their own relative files and their single instance. Only workspace TypeScript
 * (`@agent-state/*` and relative imports) is bundled. Exported for bundles built elsewhere (the
 * CLI's test build), so every test bundle treats dependencies the same way.
 */
export const thirdPartyExternal: Plugin = {
  name: 'third-party-external',
  setup(b) {
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

async function bundle(
  entryPoints: Readonly<Record<string, string>>,
  label: string,
): Promise<string> {
  const outdir = mkdtempSync(join(processOutputRoot(), `${label}-`))
  try {
    await build({
      entryPoints: { ...entryPoints },
      outdir,
      bundle: true,
      // Entries built together share one copy of what they both import (core above all).
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
  } catch (error) {
    // esbuild rejects with every error in its message (file, line, text).
    const files = Object.values(entryPoints).join(', ')
    throw new Error(`cannot bundle ${files}: ${(error as Error).message}`, { cause: error })
  }
  return outdir
}

/**
 * Compiles TypeScript entry points (output name → absolute source path) into one ES module bundle
 * for child processes, once per test process and set of entries; resolves the directory holding
 * `<name>.mjs` for each entry. Workspace sources are read through the `@agent-state/source`
 * condition, third-party packages stay external. `label` starts the directory's name (for
 * whoever reads a command line). A failed build is not cached: the next call tries again.
 */
export function bundleEntries(
  entryPoints: Readonly<Record<string, string>>,
  label: string,
): Promise<string> {
  const key = JSON.stringify(Object.entries(entryPoints).sort(([a], [b]) => (a < b ? -1 : 1)))
  let built = bundles.get(key)
  if (built === undefined) {
    built = bundle(entryPoints, label)
    bundles.set(key, built)
    built.catch(() => bundles.delete(key))
  }
  return built
}

/**
 * Whether children should start through tsx instead of a bundle (`AGENT_STATE_CHILD_TSX=1`): to
 * rule the bundle out when a child misbehaves.
 */
export function childTsxRequested(): boolean {
  return process.env.AGENT_STATE_CHILD_TSX === '1'
}
