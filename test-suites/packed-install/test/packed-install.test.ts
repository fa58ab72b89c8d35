import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { freePort } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { DEMO_RUN_ROWS, DEMO_STORY } from '../../../apps/cli/test/demo-story.js'
import { lint, lintTarball } from './lint-package.js'
import { runtimeReadmeExamples } from './readme-examples.js'
import { startRegistry } from './registry.js'
import { pinWorkspaceRanges, publishStaged, stageRelease, versionStaged } from './release.js'
import {
  buildStaged,
  type PublishablePackage,
  packStaged,
  publishablePackages,
  ROOT,
  sh,
  stageWorkspace,
  writeProject,
} from './staging.js'
import { checkOpenByUrlBlock, TEMPLATE, templateSteps } from './template-steps.js'
import { typeCheckTarball } from './type-check-package.js'

// Everything happens in the system temp directory, outside the workspace: no pnpm workspace,
// no @agent-state/source condition, nothing but what npm installs from the tarballs.
const temp = mkdtempSync(join(tmpdir(), 'agent-state-packed-'))
afterAll(() => rmSync(temp, { recursive: true, force: true }))

// The pnpm shim that starts vitest sets NODE_PATH to the workspace's hoisted packages: through it
// the project could load workspace code instead of the tarballs. A user's shell has none.
// A user's shell: no workspace NODE_PATH, and no package manager's user agent (run through
// `pnpm test`, pnpm's would make the CLI name pnpm to this test's plain-npm user).
const USER = { NODE_PATH: '', npm_config_user_agent: '' }
const SMALL = {
  ...USER,
  AGENT_STATE_CONTRACT_INSTANCES: '16',
  AGENT_STATE_CONTRACT_INCREMENTS: '3',
}
const NATIVE = process.env.AGENT_STATE_PACKED_NATIVE === '1'
/** Also publish and measure the CLI as it was before it was light (every backend a dependency). */
const MEASURE_HEAVY = process.env.AGENT_STATE_REHEARSAL_MEASURE_HEAVY === '1'
const timings: Record<string, number> = {}
async function timed<T>(step: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now()
  try {
    return await work()
  } finally {
    timings[step] = Math.round((performance.now() - started) / 100) / 10
    console.log(`packed-install: ${step} in ${timings[step]} s`)
  }
}

/** The README's first TypeScript example that imports core: plain JavaScript as written. */
function rootReadmeExample(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string)
  const example = blocks.find((b) => b.includes("from '@agent-state/core'"))
  if (example === undefined) throw new Error('the root README has no core example')
  return example
}

/** What a command that must fail left: its exit code and output (the test fails if it succeeded). */
async function failureOf(
  work: Promise<unknown>,
): Promise<{ exitCode: unknown; stdout: string; stderr: string }> {
  try {
    await work
  } catch (error) {
    return error as { exitCode: unknown; stdout: string; stderr: string }
  }
  throw new Error('the command succeeded')
}

/** Disk use of a directory in KiB (`du -sk`). */
async function diskKib(dir: string): Promise<number> {
  const { stdout } = await sh('du', ['-sk', dir], { cwd: dir })
  return Number(stdout.split(/\s/)[0])
}

/** How many packages a node_modules tree holds (every level, scoped ones included). */
function countPackages(modules: string): number {
  if (!existsSync(modules)) return 0
  let count = 0
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue
    const dirs = entry.startsWith('@')
      ? readdirSync(join(modules, entry)).map((name) => join(modules, entry, name))
      : [join(modules, entry)]
    for (const dir of dirs) {
      if (!existsSync(join(dir, 'package.json'))) continue
      count += 1 + countPackages(join(dir, 'node_modules'))
    }
  }
  return count
}

/**
 * For the before/after numbers of the CLI README (knob `AGENT_STATE_REHEARSAL_MEASURE_HEAVY=1`):
 * publishes the staged CLI again as `<version>-heavy.0` with the dependency layout it had before
 * it was light (every optional peer a dependency), then times `npm install` of it in an empty
 * folder, install scripts run (better-sqlite3 compiles), and prints its size and package count.
 */
async function measureHeavyCli(
  staging: string,
  versions: ReadonlyMap<string, string>,
  registryUrl: string,
  npm: Record<string, string>,
): Promise<void> {
  const dir = join(temp, 'heavy-cli')
  cpSync(join(staging, 'apps', 'cli'), dir, {
    recursive: true,
    filter: (path) => !path.endsWith('/node_modules'),
  })
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  const range = (name: string, spec: string) =>
    spec.startsWith('workspace:') ? `^${versions.get(name)}` : spec
  const dependencies: Record<string, string> = {}
  for (const [name, spec] of Object.entries({
    ...manifest.dependencies,
    ...manifest.peerDependencies,
  }))
    dependencies[name] = range(name, spec as string)
  manifest.version = `${versions.get('@agent-state/cli')}-heavy.0`
  manifest.dependencies = dependencies
  delete manifest.peerDependencies
  delete manifest.peerDependenciesMeta
  delete manifest.devDependencies
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2))
  await sh('npm', ['publish', '--tag', 'heavy', '--registry', registryUrl], { cwd: dir, env: npm })
  const heavy = join(temp, 'heavy')
  mkdirSync(heavy)
  writeProject(heavy, 'heavy')
  await timed('heavy CLI npm install', () =>
    sh('npm', ['install', '--no-audit', '--no-fund', `@agent-state/cli@${manifest.version}`], {
      cwd: heavy,
      env: npm,
      timeoutMs: 1_200_000,
    }),
  )
  const modules = join(heavy, 'node_modules')
  const footprint = { kib: await diskKib(modules), packages: countPackages(modules) }
  console.log(`release rehearsal: heavy CLI node_modules ${JSON.stringify(footprint)}`)
}

/** A copy of the template, as a third party has it after `git clone` (no node_modules, no dist). */
function copyTemplate(project: string): void {
  cpSync(TEMPLATE, project, {
    recursive: true,
    filter: (path) => !/\/(node_modules|dist)(\/|$)/.test(path.slice(TEMPLATE.length)),
  })
}

/**
 * Runs the template README's steps in `project`, word for word, each timed; `install` runs
 * `npm install` (the one step whose source differs between the worlds). Checks what each step
 * must show: the suite's closing line without a failure, `verify`'s total without a failure,
 * and `hello` from `open-by-url.mjs`.
 */
async function runTemplateSteps(
  project: string,
  install: (argv: readonly string[]) => Promise<unknown>,
  env: Record<string, string> = {},
): Promise<void> {
  checkOpenByUrlBlock()
  const steps = templateSteps()
  expect(steps.map((argv) => argv.join(' '))).toContain('npm install')
  for (const argv of steps) {
    const line = argv.join(' ')
    if (line === 'npm install') {
      await timed(`template: ${line}`, () => install(argv))
      continue
    }
    const result = await timed(`template: ${line}`, () =>
      sh(argv[0] as string, argv.slice(1), { cwd: project, env: { ...SMALL, ...env } }),
    )
    if (line === 'npx vitest run') {
      // vitest's closing line, e.g. "Tests  64 passed | 9 skipped (73)": no failed test.
      const closing = result.stdout.split('\n').find((l) => /^\s*Tests\s+\d+ passed/.test(l))
      expect(closing, result.stdout.slice(-3000)).toBeDefined()
      expect(closing).not.toMatch(/failed/)
    }
    if (argv[1] === 'agent-state' && argv.includes('verify')) {
      expect(result.stdout).toMatch(/total\s+passed \d+\s+failed 0/)
    }
    if (line === 'node open-by-url.mjs') expect(result.stdout.trim()).toBe('hello')
  }
}

describe('publint, as this test runs it', () => {
  it('reports a package whose exports point at a file the tarball lacks', async () => {
    const manifest = {
      name: 'broken',
      version: '1.0.0',
      type: 'module',
      exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } },
    }
    const messages = await lint({
      pkgDir: 'package',
      pack: { files: [{ name: 'package/package.json', data: JSON.stringify(manifest) }] },
      level: 'suggestion',
    })
    expect(messages.some((line) => line.startsWith('error: '))).toBe(true)
  })
})

describe('attw (esm-only profile), as this test runs it', () => {
  it('reports an ESM package whose types say CommonJS (FalseCJS, node16 from ESM)', async () => {
    // "type": "module" makes index.js ESM, while index.d.cts declares CommonJS: an ESM consumer
    // under node16 would be typed for the wrong module system.
    const dir = join(temp, 'attw-broken', 'package')
    mkdirSync(dir, { recursive: true })
    const manifest = {
      name: 'broken',
      version: '1.0.0',
      type: 'module',
      exports: { '.': { types: './index.d.cts', default: './index.js' } },
    }
    writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest))
    writeFileSync(join(dir, 'index.js'), 'export const answer = 42\n')
    writeFileSync(join(dir, 'index.d.cts'), 'export declare const answer: number\n')
    const tarball = join(temp, 'attw-broken.tgz')
    await sh('tar', ['-czf', tarball, '-C', join(temp, 'attw-broken'), 'package'], { cwd: temp })
    const findings = await typeCheckTarball(tarball)
    expect(
      findings.some((line) => /^FalseCJS .*node16-esm/.test(line)),
      findings.join('\n'),
    ).toBe(true)
  })
})

describe('the published packages, installed with npm outside the workspace', () => {
  /** What the first test built, which the release rehearsal publishes. */
  let built: { staging: string; packages: PublishablePackage[] } | undefined
  it('build, pack, install, and run: the template suite, the README examples, verify, demo', async () => {
    const packages = publishablePackages()
    expect(packages.length).toBeGreaterThanOrEqual(11)
    const staging = join(temp, 'staging')
    const tarballDir = join(temp, 'tarballs')
    stageWorkspace(staging, packages)
    await timed('build', () => buildStaged(staging, packages))
    built = { staging, packages }
    const tarballs = await timed('pack', () => packStaged(staging, packages, tarballDir))
    expect([...tarballs.keys()].sort()).toEqual(packages.map((p) => p.name).sort())
    // publint on every tarball, suggestions included: nothing to report.
    const findings: Record<string, string[]> = {}
    for (const pkg of packages) {
      const messages = await lintTarball(tarballs.get(pkg.name) as string)
      if (messages.length > 0) findings[pkg.name] = messages
    }
    expect(findings).toEqual({})
    // attw on every tarball, esm-only profile (see README): nothing to report either.
    const typeFindings: Record<string, string[]> = {}
    await timed('attw', async () => {
      for (const pkg of packages) {
        const messages = await typeCheckTarball(tarballs.get(pkg.name) as string)
        if (messages.length > 0) typeFindings[pkg.name] = messages
      }
    })
    expect(typeFindings).toEqual({})

    // The template, as a third party would have it after `git clone`, its README's steps word for
    // word, with the tarballs for step 2's `npm install` (as the README says for this world).
    const project = join(temp, 'project')
    copyTemplate(project)
    await runTemplateSteps(project, (argv) =>
      sh(
        'npm',
        [
          ...argv.slice(1),
          '--no-audit',
          '--no-fund',
          '--prefer-offline',
          // better-sqlite3 compiles its native addon from source here (no prebuilt binary can
          // be downloaded): minutes on a loaded 2-core box, for a backend this test never opens.
          // AGENT_STATE_PACKED_NATIVE=1 runs the install scripts too.
          ...(NATIVE ? [] : ['--ignore-scripts']),
          ...tarballs.values(),
          // For the runtime README examples below, run as a user runs TypeScript.
          'tsx',
        ],
        { cwd: project, env: USER },
      ),
    )

    const exampleDir = join(project, 'readme-example')
    writeFileSync(join(project, 'readme-example.mjs'), rootReadmeExample())
    await timed('README example', () =>
      sh(process.execPath, ['readme-example.mjs'], {
        cwd: project,
        env: { ...USER, AGENT_STATE_URL: `file:${exampleDir}` },
      }),
    )
    expect(readdirSync(exampleDir).length).toBeGreaterThan(0)

    const bin = join(project, 'node_modules', '.bin', 'agent-state')
    const verify = await timed('agent-state verify memory:', () =>
      sh(bin, ['verify', 'memory:'], { cwd: project, env: SMALL }),
    )
    expect(verify.stdout).toMatch(/total\s+passed \d+\s+failed 0/)

    // The runtime README's main examples, as a user runs TypeScript (tsx, installed above),
    // from the tarballs' dist/: no source condition, and the import resolves inside the project.
    const resolved = await sh(
      process.execPath,
      ['--input-type=module', '-e', "console.log(import.meta.resolve('@agent-state/runtime'))"],
      { cwd: project, env: USER },
    )
    expect(resolved.stdout.trim()).toBe(
      pathToFileURL(join(project, 'node_modules', '@agent-state', 'runtime', 'dist', 'index.js'))
        .href,
    )
    const runtimeUrl = NATIVE ? 'sqlite:./state.db' : 'file:./runtime-readme-state'
    const outputs: string[] = []
    await timed('runtime README examples', async () => {
      for (const [index, example] of runtimeReadmeExamples(runtimeUrl).entries()) {
        const file = `runtime-readme-${index}.ts`
        writeFileSync(join(project, file), example.code)
        const result = await sh(process.execPath, ['--import', 'tsx', file], {
          cwd: project,
          env: USER,
        })
        expect(result.stderr, example.heading).toBe('')
        outputs.push(result.stdout)
      }
    })
    // What the blocks' comments say they print.
    const [sessions = '', workers = ''] = outputs
    const lines = sessions.trimEnd().split('\n')
    expect(lines.slice(0, 4), sessions).toEqual([
      'error',
      '# Plan',
      '- inspect PR',
      "[ 'evidence/files.json', 'plan.md' ]",
    ])
    expect(sessions).toContain("sessions: [ 'review-42' ]")
    expect(workers.trimEnd().split('\n').at(-1), workers).toBe('done')

    // The demo: a killed owner resumed without repeating its confirmed effect (see apps/cli).
    const demo = await timed('agent-state demo', () =>
      sh(bin, ['demo'], { cwd: project, env: USER }),
    )
    for (const line of DEMO_STORY) expect(demo.stdout, demo.stdout).toMatch(line)
    const namespace = /--namespace (demo-\S+)/.exec(demo.stdout)?.[1] as string
    const runs = await sh(bin, ['runs', '--json', '--namespace', namespace], {
      cwd: project,
      env: USER,
    })
    expect(JSON.parse(runs.stdout).runs).toMatchObject(DEMO_RUN_ROWS)

    console.log(`packed-install timings (s): ${JSON.stringify(timings)}`)
  })

  it('release rehearsal: changeset version, publish to a private registry, install with plain npm', async () => {
    if (built === undefined) throw new Error('the test above did not build the packages')
    const { staging, packages } = built
    stageRelease(staging)
    const versions = await timed('changeset version', () => versionStaged(staging, packages))
    pinWorkspaceRanges(staging, packages, versions)
    const registry = await timed('registry start', () => startRegistry(join(temp, 'registry')))
    try {
      const npmrc = join(temp, 'rehearsal.npmrc')
      await timed('publish', () => publishStaged(staging, registry, npmrc))
      // Every publishable package is served at its new version, and nothing else is.
      for (const [name, version] of versions) {
        const answer = await fetch(`${registry.url}${name.replace('/', '%2f')}`)
        expect(answer.status, name).toBe(200)
        const served = (await answer.json()) as { versions: Record<string, unknown> }
        expect(Object.keys(served.versions), name).toEqual([version])
      }
      // Plain npm, its user config a temp npmrc sending the @agent-state scope to the registry
      // (everything else comes from npm's own registry, through the warm cache).
      const npm = { ...USER, npm_config_userconfig: npmrc }

      // The light CLI alone: what `npx @agent-state/cli demo` installs.
      const light = join(temp, 'light')
      mkdirSync(light)
      writeProject(light, 'light')
      await timed('light CLI npm install', () =>
        sh('npm', ['install', '--no-audit', '--no-fund', '@agent-state/cli'], {
          cwd: light,
          env: npm,
        }),
      )
      const modules = join(light, 'node_modules')
      const footprint = { kib: await diskKib(modules), packages: countPackages(modules) }
      console.log(`release rehearsal: light CLI node_modules ${JSON.stringify(footprint)}`)
      for (const name of ['redis', 's3', 'sqlite', 'postgres', 'contract']) {
        expect(existsSync(join(modules, '@agent-state', name)), name).toBe(false)
      }
      for (const name of ['better-sqlite3', 'vitest', 'ioredis']) {
        expect(existsSync(join(modules, name)), name).toBe(false)
      }
      const demo = await timed('light CLI demo', () =>
        sh('npx', ['agent-state', 'demo'], { cwd: light, env: npm }),
      )
      for (const line of DEMO_STORY) expect(demo.stdout, demo.stdout).toMatch(line)
      const port = await freePort()
      const redisUrl = `redis://127.0.0.1:${port}/0?connectTimeoutMs=500`
      const noRedis = await failureOf(
        sh('npx', ['agent-state', 'ls', '-u', redisUrl], { cwd: light, env: npm }),
      )
      expect(noRedis.exitCode).toBe(3)
      expect(noRedis.stderr).toContain(
        'needs the package @agent-state/redis, which is not installed: install it to use redis: URLs (npm install @agent-state/redis)',
      )
      const noVitest = await failureOf(
        sh('npx', ['agent-state', 'verify', 'memory:'], { cwd: light, env: npm }),
      )
      expect(noVitest.exitCode).toBe(3)
      expect(noVitest.stderr).toContain(
        'agent-state verify needs @agent-state/contract and vitest, which the CLI does not install by itself: install them next to the CLI (npm install @agent-state/contract vitest)',
      )
      if (MEASURE_HEAVY) await measureHeavyCli(staging, versions, registry.url, npm)

      // A backend installed beside it: loaded on demand (the server is down: exit 3, another error).
      await timed('npm install @agent-state/redis', () =>
        sh('npm', ['install', '--no-audit', '--no-fund', '@agent-state/redis'], {
          cwd: light,
          env: npm,
        }),
      )
      const redis = await failureOf(
        sh('npx', ['agent-state', 'ls', '-u', redisUrl], { cwd: light, env: npm }),
      )
      expect(redis.exitCode).toBe(3)
      expect(redis.stderr).toContain(`redis://127.0.0.1:${port}/0`)
      expect(redis.stderr).not.toContain('not installed')

      // The template from the registry: its ranges set to the release (the procedure's step, the
      // same script), then its README's steps word for word, `npm install` included.
      const project = join(temp, 'template-from-registry')
      copyTemplate(project)
      await sh(
        process.execPath,
        [join(ROOT, 'scripts', 'sync-template-versions.mjs'), staging, project],
        { cwd: project },
      )
      await runTemplateSteps(
        project,
        (argv) => sh(argv[0] as string, argv.slice(1), { cwd: project, env: npm }),
        npm,
      )
    } finally {
      await registry.stop()
      console.log(`packed-install timings (s): ${JSON.stringify(timings)}`)
    }
  })
})
