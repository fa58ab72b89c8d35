import { createRequire } from 'node:module'
import { isAbsolute, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { BACKEND_PACKAGES, isPackageMissing } from '@agent-state/core'
import { loadOptional } from './optional-package.js'

/**
 * The built-in backend packages (core's scheme table, `BACKEND_PACKAGES`),
 * each imported from the CLI's own location. Only fs and memory are
 * dependencies of the CLI; Redis, S3, SQLite and PostgreSQL are optional
 * peers, installed by the user who needs them (see the README): a missing
 * one fails here with Node's "Cannot find package", which `openBackend`
 * turns into "install @agent-state/redis to use redis: URLs".
 */
const loaders: Record<string, () => Promise<unknown>> = {
  '@agent-state/memory': () => import('@agent-state/memory'),
  '@agent-state/fs': () => import('@agent-state/fs'),
  '@agent-state/sqlite': () => import('@agent-state/sqlite'),
  '@agent-state/redis': () => import('@agent-state/redis'),
  '@agent-state/s3': () => import('@agent-state/s3'),
  '@agent-state/postgres': () => import('@agent-state/postgres'),
} satisfies Record<(typeof BACKEND_PACKAGES)[keyof typeof BACKEND_PACKAGES], unknown>

/** Where `packageName` resolves from the working directory's project, or `undefined`. */
function resolveFromWorkingDirectory(packageName: string): string | undefined {
  try {
    return createRequire(join(process.cwd(), 'package.json')).resolve(packageName)
  } catch {
    return undefined
  }
}

/** The environment variable `--module` sets, so vitest workers and child processes see it too. */
export const MODULE_ENV = 'AGENT_STATE_MODULE'

const TYPESCRIPT = /\.[cm]?ts$/

/** TypeScript module files loaded in this process, by file URL. */
const typescriptModules = new Map<string, Promise<unknown>>()

/**
 * Whether a `--module` value names a file (`./x.ts`, `/abs/x.js`, `file:…`, or
 * any name ending in a JavaScript or TypeScript extension) rather than a package.
 */
export function isModuleFile(specifier: string): boolean {
  return (
    specifier.startsWith('.') ||
    isAbsolute(specifier) ||
    specifier.startsWith('file:') ||
    /\.[cm]?[jt]s$/.test(specifier)
  )
}

/** A `--module` value as given to `openBackend`: files made absolute (from the working directory). */
export function resolveModuleSpecifier(specifier: string): string {
  if (!isModuleFile(specifier) || specifier.startsWith('file:')) return specifier
  return resolve(specifier)
}

/**
 * An `importer` for `openBackend`: the built-in backend packages from the
 * CLI's location, then from the working directory's project; a third-party
 * module file directly (TypeScript through tsx, an optional peer of the
 * CLI); a third-party package from the working directory's project first,
 * then from the CLI's location.
 */
export async function importBackendPackage(packageName: string): Promise<unknown> {
  const load = loaders[packageName]
  if (load !== undefined) {
    try {
      return await load()
    } catch (error) {
      // Not beside the CLI (an `npx` copy): the project in the working directory may have it.
      const resolved = isPackageMissing(packageName, error)
        ? resolveFromWorkingDirectory(packageName)
        : undefined
      if (resolved === undefined) throw error
      return import(pathToFileURL(resolved).href)
    }
  }
  if (isModuleFile(packageName)) {
    const url = packageName.startsWith('file:')
      ? packageName
      : pathToFileURL(resolve(packageName)).href
    if (!TYPESCRIPT.test(packageName)) return import(url)
    // tsx evaluates a module anew on every tsImport: keep one, as import() would, so that
    // every instance opened in this process shares the module's state.
    let loaded = typescriptModules.get(url)
    if (loaded === undefined) {
      loaded = loadOptional(
        () => import('tsx/esm/api'),
        ['tsx'],
        'a TypeScript --module file (or build it to JavaScript)',
      ).then(({ tsImport }) => tsImport(url, import.meta.url))
      typescriptModules.set(url, loaded)
      loaded.catch(() => typescriptModules.delete(url))
    }
    return loaded
  }
  const resolved = resolveFromWorkingDirectory(packageName)
  return import(resolved === undefined ? packageName : pathToFileURL(resolved).href)
}

/**
 * What the CLI passes to `openBackend` for `url`: its importer, and, when
 * `--module` (or `AGENT_STATE_MODULE`) is set, that module for the URL's
 * scheme. Built-in schemes always open their own package: `openBackend`
 * refuses to remap them, and the CLI leaves them alone rather than fail.
 */
export function backendLoading(url: string): {
  importer: (name: string) => Promise<unknown>
  schemes?: Record<string, string>
} {
  const module = process.env[MODULE_ENV]
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase()
  if (
    module === undefined ||
    module === '' ||
    scheme === undefined ||
    Object.hasOwn(BACKEND_PACKAGES, `${scheme}:`)
  ) {
    return { importer: importBackendPackage }
  }
  return { importer: importBackendPackage, schemes: { [`${scheme}:`]: module } }
}
