import { AgentStateError } from './errors.js'

/** Which package serves each built-in URL scheme. */
export const BACKEND_PACKAGES = {
  'memory:': '@agent-state/memory',
  'file:': '@agent-state/fs',
  'sqlite:': '@agent-state/sqlite',
  'redis:': '@agent-state/redis',
  'rediss:': '@agent-state/redis',
  'redis+sentinel:': '@agent-state/redis',
  's3:': '@agent-state/s3',
  'postgres:': '@agent-state/postgres',
  'postgresql:': '@agent-state/postgres',
} as const satisfies Record<string, string>

const SCHEME = /^[a-z][a-z0-9+.-]*:$/

/**
 * The registrations of this process, kept on `globalThis` under a
 * `Symbol.for` key: an application and a library may each load their own
 * copy of core, and a scheme registered through one must open through the other.
 */
const registry: Map<string, string> = (() => {
  const key = Symbol.for('@agent-state/core/backend-schemes')
  const holder = globalThis as { [key]?: Map<string, string> }
  holder[key] ??= new Map<string, string>()
  return holder[key]
})()

function invalid(message: string, context: Record<string, unknown>): AgentStateError {
  return new AgentStateError('INVALID_ARGUMENT', message, { context })
}

/**
 * Checks a third-party scheme and its module: the scheme is lower-case with
 * its colon (`"lmdb:"`) and not built in; the module is a package name, an
 * absolute path, a `./`-relative path (from the working directory) or a
 * `file:` URL.
 *
 * @throws `INVALID_ARGUMENT`
 */
export function checkSchemeRegistration(scheme: unknown, moduleSpecifier: unknown): void {
  if (typeof scheme !== 'string' || !SCHEME.test(scheme)) {
    throw invalid(
      `A backend URL scheme is lower-case letters, digits, "+", "-" or "." with its colon, like "lmdb:"; got ${JSON.stringify(scheme)}`,
      { scheme: String(scheme) },
    )
  }
  if (Object.hasOwn(BACKEND_PACKAGES, scheme)) {
    throw invalid(`The scheme ${scheme} is built in; a third-party backend takes its own scheme`, {
      scheme,
    })
  }
  if (typeof moduleSpecifier !== 'string' || moduleSpecifier.trim().length === 0) {
    throw invalid(`The module of the scheme ${scheme} must be a package name or a path`, {
      scheme,
    })
  }
}

/**
 * Makes `openBackend` open URLs of `scheme` with `moduleSpecifier`, a package
 * or a module file exporting `createBackendFromUrl(url, options)` (see
 * `BackendUrlModule`). The module is imported on the first `openBackend` of
 * such a URL, never here, with the same errors as a built-in backend's
 * package: `UNSUPPORTED` naming it when it cannot be loaded or does not export
 * `createBackendFromUrl`.
 *
 * Registering the same scheme again with the same module does nothing; with
 * another module it fails (unregister first), so two libraries cannot
 * silently take each other's scheme. For one call only, pass
 * `openBackend(url, { schemes: { 'lmdb:': '@acme/agent-state-lmdb' } })`.
 *
 * @example
 * ```ts
 * registerBackendScheme('lmdb:', '@acme/agent-state-lmdb')
 * const backend = await openBackend('lmdb:./state')
 * ```
 * @throws `INVALID_ARGUMENT` for a malformed or built-in scheme, an empty
 *   module, or a scheme already registered to another module.
 */
export function registerBackendScheme(scheme: string, moduleSpecifier: string): void {
  checkSchemeRegistration(scheme, moduleSpecifier)
  const current = registry.get(scheme)
  if (current !== undefined && current !== moduleSpecifier) {
    throw invalid(
      `The scheme ${scheme} is already registered to ${current}; unregister it before registering ${moduleSpecifier}`,
      { scheme, registered: current },
    )
  }
  registry.set(scheme, moduleSpecifier)
}

/** Removes a registration of {@link registerBackendScheme}; resolves whether there was one. */
export function unregisterBackendScheme(scheme: string): boolean {
  return registry.delete(scheme)
}

/** The schemes registered with {@link registerBackendScheme} and their modules. */
export function registeredBackendSchemes(): Readonly<Record<string, string>> {
  return Object.fromEntries(registry)
}

/**
 * The module serving `scheme`: a built-in package, then `schemes` (one
 * call's own), then the registrations; `undefined` when none.
 */
export function moduleForScheme(
  scheme: string,
  schemes: Readonly<Record<string, string>> | undefined,
): { readonly specifier: string; readonly builtIn: boolean } | undefined {
  const builtIn = BACKEND_PACKAGES[scheme as keyof typeof BACKEND_PACKAGES]
  if (builtIn !== undefined) return { specifier: builtIn, builtIn: true }
  const own = schemes !== undefined && Object.hasOwn(schemes, scheme) ? schemes[scheme] : undefined
  const specifier = own ?? registry.get(scheme)
  return specifier === undefined ? undefined : { specifier, builtIn: false }
}

/** Every scheme `openBackend` would accept with these per-call `schemes`. */
export function knownSchemes(schemes: Readonly<Record<string, string>> | undefined): string[] {
  return [
    ...new Set([
      ...Object.keys(BACKEND_PACKAGES),
      ...Object.keys(schemes ?? {}),
      ...registry.keys(),
    ]),
  ]
}

/** Whether a module specifier names a file rather than a package. */
export function isModulePath(specifier: string): boolean {
  return (
    specifier.startsWith('/') ||
    specifier.startsWith('./') ||
    specifier.startsWith('../') ||
    specifier.startsWith('file:')
  )
}
