import { execFile } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** The repository root. */
export const ROOT = join(import.meta.dirname, '..', '..', '..')

/** A publishable package: not private, with a build script. */
export interface PublishablePackage {
  readonly name: string
  /** Path relative to the root (`packages/core`). */
  readonly dir: string
}

/** Every publishable workspace package. */
export function publishablePackages(): PublishablePackage[] {
  const found: PublishablePackage[] = []
  for (const group of ['packages', 'apps', 'test-suites']) {
    for (const name of readdirSync(join(ROOT, group))) {
      const manifest = join(ROOT, group, name, 'package.json')
      if (!existsSync(manifest)) continue
      const pkg = JSON.parse(readFileSync(manifest, 'utf8'))
      if (pkg.private !== true && pkg.scripts?.build !== undefined) {
        found.push({ name: pkg.name, dir: `${group}/${name}` })
      }
    }
  }
  return found
}

/** Runs a command, resolving its output; a failure carries both streams in its message. */
export async function sh(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string>; timeoutMs?: number },
): Promise<{ stdout: string; stderr: string }> {
  try {
    const result = await run(command, [...args], {
      cwd: options.cwd,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0', ...options.env },
      timeout: options.timeoutMs ?? 600_000,
      maxBuffer: 64 * 1024 * 1024,
    })
    return { stdout: result.stdout, stderr: result.stderr }
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string; code?: unknown }
    throw Object.assign(
      new Error(
        `${command} ${args.join(' ')} failed in ${options.cwd} (exit ${String(e.code)}): ${e.message}\n--- stdout\n${e.stdout ?? ''}\n--- stderr\n${e.stderr ?? ''}`,
      ),
      { exitCode: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' },
    )
  }
}

/**
 * A copy of the publishable packages' sources in `staging` (their node_modules
 * linked to the workspace's), so that building and packing there leaves no
 * `dist/` in the checkout: the workspace keeps running from sources.
 */
export function stageWorkspace(staging: string, packages: readonly PublishablePackage[]): void {
  for (const file of ['package.json', 'pnpm-workspace.yaml', 'tsconfig.base.json']) {
    cpSync(join(ROOT, file), join(staging, file))
  }
  // The root's dev dependencies (@types/node, typescript) serve every package's build.
  symlinkSync(join(ROOT, 'node_modules'), join(staging, 'node_modules'), 'dir')
  for (const { dir } of packages) {
    const from = join(ROOT, dir)
    const to = join(staging, dir)
    mkdirSync(to, { recursive: true })
    for (const entry of readdirSync(from)) {
      if (['node_modules', 'dist', 'test', '.turbo', '.vitest-report.json'].includes(entry))
        continue
      cpSync(join(from, entry), join(to, entry), { recursive: true })
    }
    symlinkSync(join(from, 'node_modules'), join(to, 'node_modules'), 'dir')
  }
}

/** `tsc` of the workspace. */
export function tscPath(): string {
  return createRequire(join(ROOT, 'package.json')).resolve('typescript/bin/tsc')
}

/** Builds each staged package (two at a time: the box has two cores), dependencies first. */
export async function buildStaged(staging: string, packages: readonly PublishablePackage[]) {
  const tsc = tscPath()
  // core first: every other package's types come through it.
  const [first, ...rest] = [...packages].sort((a, b) =>
    a.name === '@agent-state/core' ? -1 : b.name === '@agent-state/core' ? 1 : 0,
  )
  const build = (pkg: PublishablePackage) =>
    sh(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: join(staging, pkg.dir) })
  if (first !== undefined) await build(first)
  const queue = [...rest]
  await Promise.all(
    [0, 1].map(async () => {
      for (let pkg = queue.shift(); pkg !== undefined; pkg = queue.shift()) await build(pkg)
    }),
  )
}

/** Packs each staged package with pnpm (which turns `workspace:^` into versions); resolves the tarballs. */
export async function packStaged(
  staging: string,
  packages: readonly PublishablePackage[],
  destination: string,
): Promise<Map<string, string>> {
  const tarballs = new Map<string, string>()
  for (const pkg of packages) {
    const { stdout } = await sh(
      'npx',
      ['-y', 'pnpm@12.4.2', 'pack', '--pack-destination', destination],
      { cwd: join(staging, pkg.dir) },
    )
    const file = stdout
      .trim()
      .split('\n')
      .map((line) => line.trim())
      .reverse()
      .find((line) => line.endsWith('.tgz'))
    if (file === undefined) throw new Error(`pnpm pack of ${pkg.name} named no tarball:\n${stdout}`)
    tarballs.set(pkg.name, file.startsWith('/') ? file : join(destination, file))
  }
  return tarballs
}

/** Writes a fresh npm project's package.json. */
export function writeProject(dir: string, name: string): void {
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name, version: '0.0.0', private: true, type: 'module' }, null, 2)}\n`,
  )
}
