import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { relative, resolve } from 'node:path'
import { parseCircular, parseDependencyTree } from 'dpdm'

/** The source files whose imports are followed: TypeScript and JavaScript modules. */
export const SOURCE_EXTENSIONS = ['.ts', '.mts', '.cts', '.tsx', '.js', '.mjs', '.cjs'] as const

/**
 * An import loop: module paths relative to the analysed root, each importing the next, the
 * last importing the first.
 */
export type ImportLoop = readonly string[]

/** Options of {@link findImportLoops}. */
export interface FindImportLoopsOptions {
  /** The directory the reported paths are relative to. */
  readonly root: string
  /** The modules to start from (paths relative to `root`, or absolute); their imports are followed. */
  readonly files: readonly string[]
}

/**
 * Every import loop reachable from `files`, type-only imports included (a type-only loop
 * still ties the two modules into one unit a reader must hold together).
 *
 * The graph comes from `dpdm` (a maintained dependency analyser) rather than hand-written
 * parsing: it resolves each specifier with the TypeScript resolver of the nearest
 * `tsconfig.json`, so `./x.js` finds `./x.ts` and `@agent-state/core` finds the workspace
 * package's source through the `@agent-state/source` condition, which makes loops across
 * packages visible too. `node_modules` and build output are not followed.
 */
export async function findImportLoops(options: FindImportLoopsOptions): Promise<ImportLoop[]> {
  const root = resolve(options.root)
  if (options.files.length === 0) return []
  const tree = await parseDependencyTree(
    options.files.map((file) => resolve(root, file)),
    {
      cwd: root,
      context: root,
      // Not transformed to JavaScript first: a type-only import is an edge like any other.
      transform: false,
      skipDynamicImports: false,
      exclude: /\/node_modules\/|\/dist\//,
    },
  )
  return parseCircular(tree).map((loop) => loop.map((file) => relative(root, resolve(root, file))))
}

/**
 * The repository's own modules: every tracked (or new, not ignored) source file, as git
 * lists it, so build output and dependencies are never scanned.
 */
export function repositoryModules(root: string): string[] {
  const out = execFileSync(
    'git',
    [
      'ls-files',
      '--cached',
      '--others',
      '--exclude-standard',
      '--',
      ...SOURCE_EXTENSIONS.map((ext) => `*${ext}`),
    ],
    { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  )
  // A file deleted in the work tree but still in the index is not a module any more.
  return out
    .split('\n')
    .filter((file) => file !== '')
    .filter((file) => existsSync(resolve(root, file)))
}

/** One line per loop, `a.ts -> b.ts -> a.ts`, for a failure message. */
export function describeLoops(loops: readonly ImportLoop[]): string {
  return loops.map((loop) => [...loop, loop[0]].join(' -> ')).join('\n')
}
