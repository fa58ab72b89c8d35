import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { bundleEntries, childTsxRequested } from '@agent-state/child-bundles'

/**
 * The backend packages a child may load by URL (`openBackend` imports them by name at run
 * time, so they are bundled as entries of their own and made resolvable next to the bundle).
 */
const BACKEND_PACKAGES = ['memory', 'fs', 'sqlite', 'redis', 's3', 'postgres'] as const

const here = dirname(fileURLToPath(import.meta.url))
const bundles = new Map<string, Promise<string>>()
const ready = new Map<string, string>()

/** The TypeScript entry of workspace package `@agent-state/<name>` (its `@agent-state/source` export). */
function sourceEntry(name: string): string {
  const dir = realpathSync(join(here, '..', 'node_modules', '@agent-state', name))
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
    exports: { '.': { '@agent-state/source': string } }
  }
  return join(dir, manifest.exports['.']['@agent-state/source'])
}

async function bundle(entry: string): Promise<string> {
  const backends = Object.fromEntries(
    BACKEND_PACKAGES.map((name) => [`backend-${name}`, sourceEntry(name)]),
  )
  const outdir = await bundleEntries(
    { main: entry, ...backends },
    basename(entry).replace(/\.\w+$/, ''),
  )
  // `openBackend('redis://…')` runs `import('@agent-state/redis')`: Node resolves it from the
  // bundle's directory to the bundled entry, which shares the bundle's one copy of core.
  for (const name of BACKEND_PACKAGES) {
    const pkg = join(outdir, 'node_modules', '@agent-state', name)
    mkdirSync(pkg, { recursive: true })
    const target = relative(pkg, join(outdir, `backend-${name}.mjs`))
    // Generated glue, not source: it re-exports the bundled entry whole.
    writeFileSync(join(pkg, 'index.mjs'), `export * from './${target}'\n`)
    writeFileSync(
      join(pkg, 'package.json'),
      JSON.stringify({ name: `@agent-state/${name}`, type: 'module', exports: './index.mjs' }),
    )
  }
  return join(outdir, 'main.mjs')
}

/**
 * The Node arguments that run TypeScript file `entry` (absolute path) in a child process:
 * `spawn(process.execPath, [...args, ...childArgs])`. By default the file runs as a prebuilt
 * bundle (`@agent-state/child-bundles`): the workspace sources it imports are compiled once per
 * test process instead of at every child start-up (`--import tsx`), which was most of a short
 * child's cost. The child runs the same sources; only their compilation moved.
 * `AGENT_STATE_CHILD_TSX=1` starts children through tsx as before (to rule the bundle out when a
 * child misbehaves).
 */
export async function childArgs(entry: string): Promise<readonly string[]> {
  if (childTsxRequested()) return ['--conditions=@agent-state/source', '--import', 'tsx', entry]
  let built = bundles.get(entry)
  if (built === undefined) {
    built = bundle(entry)
    bundles.set(entry, built)
    built.catch(() => bundles.delete(entry))
  }
  const main = await built
  ready.set(entry, main)
  return ['--enable-source-maps', main]
}

/**
 * {@link childArgs} for a caller that must spawn synchronously: the entry must have been
 * prepared by an awaited `childArgs(entry)` first (in a `beforeAll`); throws otherwise.
 */
export function preparedChildArgs(entry: string): readonly string[] {
  if (childTsxRequested()) return ['--conditions=@agent-state/source', '--import', 'tsx', entry]
  const main = ready.get(entry)
  if (main === undefined) throw new Error(`${entry}: await childArgs(entry) before spawning it`)
  return ['--enable-source-maps', main]
}
