import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { ROOT, sh } from './staging.js'

/** Every workspace package directory (relative to the root), private ones too. */
function workspaceDirs(): string[] {
  const dirs = ['benchmarks']
  for (const group of ['packages', 'apps', 'test-suites']) {
    for (const name of readdirSync(join(ROOT, group))) dirs.push(`${group}/${name}`)
  }
  return dirs.filter((dir) => existsSync(join(ROOT, dir, 'package.json')))
}

/**
 * Makes the staged tree (a copy of the publishable packages, built) a scratch copy of the
 * workspace for changesets: the pending changesets, and the manifest of every other workspace
 * package (the private ones, which changesets name too and never publish).
 */
export function stageRelease(staging: string): void {
  cpSync(join(ROOT, '.changeset'), join(staging, '.changeset'), { recursive: true })
  for (const dir of workspaceDirs()) {
    const manifest = join(staging, dir, 'package.json')
    if (existsSync(manifest)) continue
    mkdirSync(join(staging, dir), { recursive: true })
    cpSync(join(ROOT, dir, 'package.json'), manifest)
  }
}

/** `changeset version` in the staged tree; resolves each publishable package's new version. */
export async function versionStaged(
  staging: string,
  packages: readonly { name: string; dir: string }[],
): Promise<Map<string, string>> {
  const changeset = createRequire(import.meta.url).resolve('@changesets/cli/bin.js')
  await sh(process.execPath, [changeset, 'version'], { cwd: staging })
  return new Map(
    packages.map(({ name, dir }) => {
      const pkg = JSON.parse(readFileSync(join(staging, dir, 'package.json'), 'utf8'))
      return [name, pkg.version as string]
    }),
  )
}

/**
 * Sets the staged manifests' `workspace:` ranges of the released packages to their new versions
 * (`workspace:^` → `^<version>`, `workspace:~` → `~<version>`, `workspace:*` → `<version>`), what
 * `pnpm publish` does in a real checkout. Here pnpm would read the versions through the staged
 * packages' `node_modules`, which link to the checkout's packages and so hold the versions from
 * before `changeset version`.
 */
export function pinWorkspaceRanges(
  staging: string,
  packages: readonly { name: string; dir: string }[],
  versions: ReadonlyMap<string, string>,
): void {
  for (const { dir } of packages) {
    const path = join(staging, dir, 'package.json')
    const pkg = JSON.parse(readFileSync(path, 'utf8'))
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) {
      for (const [name, spec] of Object.entries((pkg[field] ?? {}) as Record<string, string>)) {
        const version = versions.get(name)
        if (!spec.startsWith('workspace:') || version === undefined) continue
        const range = spec.slice('workspace:'.length)
        pkg[field][name] = range === '*' ? version : `${range}${version}`
      }
    }
    writeFileSync(path, `${JSON.stringify(pkg, null, 2)}\n`)
  }
}

/**
 * `pnpm publish -r` of the staged tree to `registry` (pnpm turns `workspace:^` into the new
 * versions, as `pnpm pack` does), with an npmrc of its own holding the registry's token.
 */
export async function publishStaged(
  staging: string,
  registry: { url: string; npmrc(): string },
  npmrc: string,
): Promise<string> {
  writeFileSync(npmrc, registry.npmrc(), { mode: 0o600 })
  const { stdout } = await sh(
    'npx',
    ['-y', 'pnpm@12.4.2', 'publish', '-r', '--no-git-checks', '--registry', registry.url],
    { cwd: staging, env: { npm_config_userconfig: npmrc } },
  )
  return stdout
}
