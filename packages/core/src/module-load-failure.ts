import { installCommand, runScriptCommand } from './package-manager.js'

/** How a backend module failed to load, as {@link describeModuleLoadFailure} tells it. */
export interface ModuleLoadFailure {
  /** `true` when the package itself is not installed (nothing to load), `false` when it is there but failed. */
  readonly missing: boolean
  /** One sentence for the user, naming the scheme, the module and what to do. */
  readonly message: string
}

/** The first line of an error's message (Node's resolution errors add a require stack below it). */
function firstLine(cause: unknown): string {
  const message = cause instanceof Error ? cause.message : String(cause)
  return message.split('\n')[0] ?? message
}

/**
 * Whether `cause` says that `packageName` itself cannot be found, by ESM
 * (`Cannot find package 'x' imported from …`) or CommonJS resolution
 * (`Cannot find module 'x'`). A package that is installed but whose entry
 * file or own dependency is missing fails with another name in the quotes,
 * and is not "missing".
 */
export function isPackageMissing(packageName: string, cause: unknown): boolean {
  const code = (cause as { code?: unknown } | null)?.code
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false
  const message = firstLine(cause)
  return (
    message.includes(`Cannot find package '${packageName}'`) ||
    message.includes(`Cannot find module '${packageName}'`)
  )
}

/** Whether `cause` is Node refusing a TypeScript file (`Unknown file extension ".ts"`). */
function isTypeScriptRefused(cause: unknown): boolean {
  const code = (cause as { code?: unknown } | null)?.code
  return code === 'ERR_UNKNOWN_FILE_EXTENSION' && /"\.[cm]?ts"/.test(firstLine(cause))
}

/**
 * What to tell the user when the module serving `scheme` cannot be imported:
 * a package that is not installed names the command that installs it, with
 * the package manager the user runs (see `userPackageManager`); a package or
 * file that is there but fails says why (the cause's message), and for a
 * TypeScript entry, that plain `node` needs it built to JavaScript or run
 * through tsx.
 */
export function describeModuleLoadFailure(
  scheme: string,
  specifier: string,
  isPath: boolean,
  cause: unknown,
): ModuleLoadFailure {
  if (!isPath && isPackageMissing(specifier, cause)) {
    return {
      missing: true,
      message: `The ${scheme} backend needs the package ${specifier}, which is not installed: install it to use ${scheme} URLs (${installCommand(specifier)})`,
    }
  }
  const what = isPath
    ? `The ${scheme} backend's module ${specifier} could not be loaded`
    : `The ${scheme} backend's package ${specifier} is installed but could not be loaded`
  const hint = isTypeScriptRefused(cause)
    ? ` (its entry is TypeScript, which plain node does not run: build it to JavaScript first${isPath ? '' : `, ${runScriptCommand('build')}, with the package's exports naming the built file`}, or run node with tsx: node --import tsx)`
    : ''
  return { missing: false, message: `${what}: ${firstLine(cause)}${hint}` }
}
