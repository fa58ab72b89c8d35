/** The package managers whose commands the error messages name. */
export type PackageManager = 'npm' | 'pnpm' | 'yarn' | 'bun'

const MANAGERS: readonly PackageManager[] = ['npm', 'pnpm', 'yarn', 'bun']

/**
 * The package manager running this process, from `npm_config_user_agent`
 * (`"pnpm/9.12.0 npm/? node/v20.19.0 linux x64"`, which npm, pnpm, yarn and
 * bun each set for the scripts and binaries they start); `npm` when it is
 * unset or names another tool: plain `node` users get npm's commands, the
 * ones that come with Node.
 */
export function userPackageManager(
  userAgent: string | undefined = process.env.npm_config_user_agent,
): PackageManager {
  const name = userAgent?.trim().split('/')[0]?.toLowerCase()
  return MANAGERS.find((manager) => manager === name) ?? 'npm'
}

/** The command that adds `packageName` to the project with `manager`: `npm install x`, `pnpm add x`, ... */
export function installCommand(
  packageName: string,
  manager: PackageManager = userPackageManager(),
): string {
  return manager === 'npm' ? `npm install ${packageName}` : `${manager} add ${packageName}`
}

/** The command that runs a package script with `manager`: `npm run build`, `pnpm run build`, ... */
export function runScriptCommand(
  script: string,
  manager: PackageManager = userPackageManager(),
): string {
  return `${manager} run ${script}`
}
