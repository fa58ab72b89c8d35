import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'

/**
 * Makes sure Debian packages are installed, installing the missing ones with
 * apt-get (the test machines run as root). A test that needs a server must
 * never skip because it is missing: it installs it, or fails loudly.
 *
 * @param binaries paths that must exist afterwards, e.g. `/usr/bin/redis-server`
 * @param packages Debian packages that provide them
 */
export function ensureDebianPackages(
  binaries: readonly string[],
  packages: readonly string[],
): void {
  if (binaries.every((binary) => existsSync(binary))) return
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const run = (args: string[]): void => {
    execFileSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env, timeout: 600_000 })
  }
  try {
    run(['install', '-y', '--no-install-recommends', ...packages])
  } catch {
    // A fresh machine has no package lists yet.
    run(['update'])
    run(['install', '-y', '--no-install-recommends', ...packages])
  }
  const missing = binaries.filter((binary) => !existsSync(binary))
  if (missing.length > 0) {
    throw new Error(
      `apt-get installed ${packages.join(' ')} but ${missing.join(' ')} is still missing`,
    )
  }
}
