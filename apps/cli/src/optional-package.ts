import { installCommand, isPackageMissing } from '@agent-state/core'
import { CliError, EXIT } from './exit-codes.js'

/**
 * Loads what one command needs beyond the CLI's own dependencies (the
 * contract suite and vitest for `verify`, tsx for a TypeScript `--module`
 * file): they are optional peer dependencies, so an `npx @agent-state/cli`
 * that only lists or copies installs none of them. When one of `packages` is
 * not installed, fails with one line (exit 3) naming them all and the
 * command that installs them, in the package manager the user runs. Any
 * other failure (an installed package that throws) goes on as it is.
 */
export async function loadOptional<T>(
  load: () => Promise<T>,
  packages: readonly string[],
  purpose: string,
): Promise<T> {
  try {
    return await load()
  } catch (error) {
    if (!packages.some((name) => isPackageMissing(name, error))) throw error
    const names = packages.join(' and ')
    throw new CliError(
      `${purpose} needs ${names}, which the CLI does not install by itself: install ${packages.length > 1 ? 'them' : 'it'} next to the CLI (${installCommand(packages.join(' '))})`,
      EXIT.UNAVAILABLE,
      { cause: error },
    )
  }
}
