import { createRequire } from 'node:module'
import { isAbsolute, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { z } from 'zod'
import type { Backend } from './backend.js'
import {
  checkSchemeRegistration,
  isModulePath,
  knownSchemes,
  moduleForScheme,
} from './backend-schemes.js'
import type { Clock } from './clock.js'
import { AgentStateError } from './errors.js'
import { describeModuleLoadFailure } from './module-load-failure.js'

/** The embedded default: the filesystem backend in `./.agent-state`. */
export const DEFAULT_BACKEND_URL = 'file:./.agent-state'

/** Options every backend package's `createBackendFromUrl` accepts. */
export interface BackendUrlOptions {
  /**
   * Isolates this instance's keys from other namespaces on the same storage.
   * 1 to 128 characters of `[A-Za-z0-9._-]`, not starting with a dot. Default `"default"`.
   */
  readonly namespace?: string
  /** Clock for backends whose lease clock is `host` (tests move it by hand). */
  readonly clock?: Clock
}

/** Options of {@link openBackend}. */
export interface OpenBackendOptions extends BackendUrlOptions {
  /**
   * Loads a backend package by name. Default: `import()` from core's own
   * location, then from the current working directory. Applications that
   * bundle their backends pass `(name) => import(name)` from their own code.
   */
  readonly importer?: (packageName: string) => Promise<unknown>
  /**
   * Third-party schemes for this call only, scheme (with its colon) to a
   * package name or module path: `{ 'lmdb:': '@acme/agent-state-lmdb' }`.
   * They win over `registerBackendScheme` registrations; built-in schemes
   * cannot be remapped. A relative path is resolved from the working
   * directory; a TypeScript file needs a loader such as tsx (the CLI has one).
   */
  readonly schemes?: Readonly<Record<string, string>>
}

/** What a backend package must export to be opened by URL. */
export interface BackendUrlModule {
  /**
   * Opens a backend from a URL string (not a parsed `URL`: `file:./x` keeps
   * its relative path). Throws `INVALID_ARGUMENT` for a malformed URL, without
   * echoing credentials.
   */
  createBackendFromUrl(url: string, options: BackendUrlOptions): Backend | Promise<Backend>
}

/** Namespace names: safe as a directory name, a Redis hash tag, a table value and an S3 key segment. */
export const namespaceSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/,
    'a namespace is 1-128 of [A-Za-z0-9._-], not starting with a dot',
  )

const optionsSchema = z.object({
  namespace: namespaceSchema.optional(),
  clock: z.function().optional(),
  importer: z.function().optional(),
  schemes: z.record(z.string(), z.string()).optional(),
})

/** Schemes whose URL is a local path (`file:./x`, `sqlite:./x.db`): an `@` there is part of a name. */
const PATH_SCHEMES = new Set(['file:', 'sqlite:', 'memory:'])

/**
 * Hides any user info of a URL string before it is shown anywhere (errors,
 * banners, summaries): everything from the start of the authority up to the
 * LAST `@` becomes `***`. A password may hold `/`, `?`, `#`, `:` or `@`
 * unencoded, and then no parser can tell where it ends, so the last `@` is the
 * only safe bound: an `@` later in the path or query hides some of the host
 * too, which costs a less precise message and never a leaked credential. A
 * string without `scheme://` is treated the same way (from after its scheme,
 * or from its start), except the local-path schemes `file:`, `sqlite:` and
 * `memory:` without `//`, whose `@` belongs to a file name.
 */
export function redactUrl(url: string): string {
  const at = url.lastIndexOf('@')
  if (at < 0) return url
  const authority = /^\s*[a-z][a-z0-9+.-]*:[\\/]{2}/i.exec(url)
  let start: number
  if (authority !== null) start = authority[0].length
  else {
    const scheme = /^\s*([a-z][a-z0-9+.-]*:)/i.exec(url)
    if (scheme !== null && PATH_SCHEMES.has((scheme[1] as string).toLowerCase())) return url
    start = scheme === null ? 0 : scheme[0].length
  }
  return `${url.slice(0, start)}***${url.slice(at)}`
}

/** The URL's scheme with its colon, lower-cased (`"redis:"`), or `undefined`. */
function schemeOf(url: string): string | undefined {
  const match = /^([a-z][a-z0-9+.-]*):/i.exec(url)
  return match?.[1] === undefined ? undefined : `${match[1].toLowerCase()}:`
}

/** A module path as an importable `file:` URL (relative paths from the working directory). */
function moduleUrl(specifier: string): string {
  if (specifier.startsWith('file:')) return specifier
  return pathToFileURL(isAbsolute(specifier) ? specifier : resolve(specifier)).href
}

async function defaultImporter(packageName: string): Promise<unknown> {
  if (isModulePath(packageName)) return import(moduleUrl(packageName))
  try {
    return await import(packageName)
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND') throw error
    // Core may be installed in another place than the application's backends.
    const require = createRequire(join(process.cwd(), 'package.json'))
    return import(pathToFileURL(require.resolve(packageName)).href)
  }
}

/**
 * Opens the backend a URL names, loading its package on demand:
 * `memory:`, `file:./.agent-state`, `sqlite:./state.db`,
 * `redis://host:6379/0`, `s3://bucket/prefix?endpoint=…&region=…`, and any
 * third-party scheme given in `options.schemes` or registered with
 * `registerBackendScheme` (loaded the same lazy way).
 *
 * @throws `INVALID_ARGUMENT` for an unknown scheme or bad options;
 *   `UNSUPPORTED` naming the package to install when it is missing (with
 *   the user's package manager), or, for a module that is there but fails to
 *   load, why (the cause's message; a TypeScript entry needs a build or tsx).
 */
export async function openBackend(url: string, options: OpenBackendOptions = {}): Promise<Backend> {
  if (typeof url !== 'string' || url.length === 0) {
    throw new AgentStateError('INVALID_ARGUMENT', 'A backend URL must be a non-empty string')
  }
  const parsed = optionsSchema.safeParse(options)
  if (!parsed.success) {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `Invalid backend options: ${parsed.error.issues[0]?.message}`,
      {
        context: { issues: parsed.error.issues.map((issue) => issue.message) },
      },
    )
  }
  for (const [scheme, specifier] of Object.entries(options.schemes ?? {})) {
    checkSchemeRegistration(scheme, specifier)
  }
  const scheme = schemeOf(url)
  const found = scheme === undefined ? undefined : moduleForScheme(scheme, options.schemes)
  if (found === undefined) {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `Unknown backend URL ${JSON.stringify(redactUrl(url))}: expected one of ${knownSchemes(options.schemes).join(' ')} (a third-party backend's scheme is registered with registerBackendScheme)`,
      { context: { url: redactUrl(url) } },
    )
  }
  const packageName = found.specifier
  const importer = options.importer ?? defaultImporter
  let module: Partial<BackendUrlModule>
  try {
    module = (await importer(packageName)) as Partial<BackendUrlModule>
  } catch (cause) {
    const failure = describeModuleLoadFailure(
      scheme as string,
      packageName,
      isModulePath(packageName),
      cause,
    )
    throw new AgentStateError('UNSUPPORTED', failure.message, {
      context: { packageName, missing: failure.missing },
      cause,
    })
  }
  if (typeof module?.createBackendFromUrl !== 'function') {
    throw new AgentStateError(
      'UNSUPPORTED',
      `${packageName} does not export createBackendFromUrl`,
      {
        context: { packageName },
      },
    )
  }
  const { importer: _ignored, schemes: _schemes, ...backendOptions } = options
  return module.createBackendFromUrl(url, backendOptions)
}
