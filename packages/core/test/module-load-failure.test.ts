import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import {
  type AgentStateError,
  describeModuleLoadFailure,
  installCommand,
  isAgentStateError,
  openBackend,
  userPackageManager,
} from '../src/index.js'

// A project on disk with real packages in its node_modules, imported by a plain `node` in that
// project: vitest's own module runner would compile a `.ts` entry, exactly what plain node refuses.
const run = promisify(execFile)
const project = mkdtempSync(join(tmpdir(), 'agent-state-load-failure-'))
afterAll(() => rmSync(project, { recursive: true, force: true }))
const IMPORT = `try { await import(process.argv[1]) } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }`
/** Imports a package or file URL in a plain node process in the project; rethrows its error here. */
async function fromProject(specifier: string): Promise<unknown> {
  const target = specifier.startsWith('/') ? pathToFileURL(specifier).href : specifier
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', IMPORT, target], {
    cwd: project,
    env: { ...process.env, NODE_OPTIONS: '', NODE_PATH: '' },
  })
  if (stdout.trim() === '') return {}
  const { code, message } = JSON.parse(stdout) as { code?: string; message: string }
  throw Object.assign(new Error(message), code === undefined ? {} : { code })
}

function addPackage(name: string, exportsTo: string, files: Record<string, string>): void {
  const dir = join(project, 'node_modules', name)
  mkdirSync(join(dir, 'src'), { recursive: true })
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', type: 'module', exports: { '.': exportsTo } }),
  )
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text)
}
writeFileSync(join(project, 'package.json'), '{"name":"project","private":true,"type":"module"}')
addPackage('ts-entry-backend', './src/index.ts', {
  'src/index.ts': 'export function createBackendFromUrl(url: string): unknown { return { url } }\n',
})
addPackage('throwing-backend', './src/index.js', {
  'src/index.js': "throw new Error('liblmdb.so.0: cannot open shared object file')\n",
})
addPackage('needs-a-dependency-backend', './src/index.js', {
  'src/index.js': "export { open } from 'lmdb-not-installed'\n",
})

const userAgent = process.env.npm_config_user_agent
afterEach(() => {
  if (userAgent === undefined) delete process.env.npm_config_user_agent
  else process.env.npm_config_user_agent = userAgent
})

async function failure(url: string, scheme: string, module: string): Promise<AgentStateError> {
  try {
    await openBackend(url, { importer: fromProject, schemes: { [scheme]: module } })
  } catch (error) {
    if (isAgentStateError(error, 'UNSUPPORTED')) return error
    throw error
  }
  throw new Error(`${url} opened`)
}

describe('the package manager named in messages', () => {
  it('is the one in npm_config_user_agent, or npm when none is known', () => {
    expect(userPackageManager('npm/10.8.2 node/v20.19.0 linux x64 workspaces/false')).toBe('npm')
    expect(userPackageManager('pnpm/12.4.2 npm/? node/v20.19.0 linux x64')).toBe('pnpm')
    expect(userPackageManager('yarn/4.5.0 npm/? node/v20.19.0 linux x64')).toBe('yarn')
    expect(userPackageManager('bun/1.1.30 npm/? node/v20.19.0 linux x64')).toBe('bun')
    expect(userPackageManager('')).toBe('npm')
    expect(userPackageManager('deno/2.0.0')).toBe('npm')
    expect(installCommand('@agent-state/redis', 'npm')).toBe('npm install @agent-state/redis')
    expect(installCommand('@agent-state/redis', 'pnpm')).toBe('pnpm add @agent-state/redis')
    expect(installCommand('@agent-state/redis', 'yarn')).toBe('yarn add @agent-state/redis')
    expect(installCommand('@agent-state/redis', 'bun')).toBe('bun add @agent-state/redis')
  })

  it("reads the running process's npm_config_user_agent when given none (npm without one)", () => {
    try {
      vi.stubEnv('npm_config_user_agent', undefined)
      expect(userPackageManager()).toBe('npm')
      expect(installCommand('@agent-state/redis')).toBe('npm install @agent-state/redis')
      vi.stubEnv('npm_config_user_agent', 'pnpm/12.4.2 npm/? node/v20.19.0 linux x64')
      expect(userPackageManager()).toBe('pnpm')
      expect(installCommand('@agent-state/redis')).toBe('pnpm add @agent-state/redis')
    } finally {
      vi.unstubAllEnvs()
    }
  })
})

describe('a backend module that cannot be loaded (real packages, loaded by Node)', () => {
  it('a missing package: not installed, with the install command of the user’s package manager', async () => {
    process.env.npm_config_user_agent = 'npm/10.8.2 node/v20.19.0 linux x64 workspaces/false'
    const npm = await failure('lmdb:./x', 'lmdb:', 'lmdb-backend-not-installed')
    expect(npm.message).toBe(
      'The lmdb: backend needs the package lmdb-backend-not-installed, which is not installed: install it to use lmdb: URLs (npm install lmdb-backend-not-installed)',
    )
    expect(npm.context).toMatchObject({ missing: true })
    process.env.npm_config_user_agent = 'pnpm/12.4.2 npm/? node/v20.19.0 linux x64'
    const pnpm = await failure('lmdb:./x', 'lmdb:', 'lmdb-backend-not-installed')
    expect(pnpm.message).toContain('(pnpm add lmdb-backend-not-installed)')
    delete process.env.npm_config_user_agent
    const none = await failure('lmdb:./x', 'lmdb:', 'lmdb-backend-not-installed')
    expect(none.message).toContain('(npm install lmdb-backend-not-installed)')
    expect(none.message).not.toContain('pnpm')
  })

  it('a package whose entry is TypeScript: installed, refused by node, build it or use tsx', async () => {
    process.env.npm_config_user_agent = 'npm/10.8.2 node/v20.19.0 linux x64 workspaces/false'
    const error = await failure('tsb:./x', 'tsb:', 'ts-entry-backend')
    expect(error.message).toMatch(
      /^The tsb: backend's package ts-entry-backend is installed but could not be loaded: Unknown file extension "\.ts" for .*\/ts-entry-backend\/src\/index\.ts \(its entry is TypeScript, which plain node does not run: build it to JavaScript first, npm run build, with the package's exports naming the built file, or run node with tsx: node --import tsx\)$/,
    )
    expect(error.message).not.toContain('install it')
    expect(error.context).toMatchObject({ missing: false })
    expect((error.cause as { code?: string }).code).toBe('ERR_UNKNOWN_FILE_EXTENSION')
  })

  it('a package that throws at import: installed, the cause’s message, no install advice', async () => {
    const error = await failure('thr:./x', 'thr:', 'throwing-backend')
    expect(error.message).toBe(
      "The thr: backend's package throwing-backend is installed but could not be loaded: liblmdb.so.0: cannot open shared object file",
    )
  })

  it('a package whose own dependency is missing: installed, naming the dependency', async () => {
    const error = await failure('dep:./x', 'dep:', 'needs-a-dependency-backend')
    expect(error.message).toMatch(
      /^The dep: backend's package needs-a-dependency-backend is installed but could not be loaded: Cannot find package 'lmdb-not-installed' imported from /,
    )
  })

  it('a TypeScript module file given by path: why, and the same advice without a package build', async () => {
    const file = join(project, 'node_modules', 'ts-entry-backend', 'src', 'index.ts')
    const error = await failure('tsf:./x', 'tsf:', file)
    expect(error.message).toMatch(
      /^The tsf: backend's module .*index\.ts could not be loaded: Unknown file extension "\.ts" .*\(its entry is TypeScript, which plain node does not run: build it to JavaScript first, or run node with tsx: node --import tsx\)$/,
    )
  })

  it('the classification fails for a mutant that calls every failure "not installed"', () => {
    // The mutant: the old message, which sent npm users to pnpm for a package they had.
    const mutant = (scheme: string, name: string) =>
      `The ${scheme} backend needs the package ${name}: install it (pnpm add ${name})`
    const cause = Object.assign(new Error('Unknown file extension ".ts" for /p/src/index.ts'), {
      code: 'ERR_UNKNOWN_FILE_EXTENSION',
    })
    const described = describeModuleLoadFailure('tsb:', 'ts-entry-backend', false, cause)
    expect(described.message).not.toBe(mutant('tsb:', 'ts-entry-backend'))
    expect(described.missing).toBe(false)
  })
})
