import {
  cpSync,
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
import { afterAll, describe, expect, it } from 'vitest'
import { DEMO_RUN_ROW, DEMO_STORY } from '../../../apps/cli/test/demo-story.js'
import { lint, lintTarball } from './lint-package.js'
import { runtimeReadmeExamples } from './readme-examples.js'
import {
  buildStaged,
  packStaged,
  publishablePackages,
  ROOT,
  sh,
  stageWorkspace,
} from './staging.js'
import { typeCheckTarball } from './type-check-package.js'

// Everything happens in the system temp directory, outside the workspace: no pnpm workspace,
// no @agent-state/source condition, nothing but what npm installs from the tarballs.
const temp = mkdtempSync(join(tmpdir(), 'agent-state-packed-'))
afterAll(() => rmSync(temp, { recursive: true, force: true }))

// The pnpm shim that starts vitest sets NODE_PATH to the workspace's hoisted packages: through it
// the project could load workspace code instead of the tarballs. A user's shell has none.
const USER = { NODE_PATH: '' }
const SMALL = {
  ...USER,
  AGENT_STATE_CONTRACT_INSTANCES: '16',
  AGENT_STATE_CONTRACT_INCREMENTS: '3',
}
const NATIVE = process.env.AGENT_STATE_PACKED_NATIVE === '1'
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
  it('build, pack, install, and run: the template suite, the README examples, verify, demo', async () => {
    const packages = publishablePackages()
    expect(packages.length).toBeGreaterThanOrEqual(11)
    const staging = join(temp, 'staging')
    const tarballDir = join(temp, 'tarballs')
    stageWorkspace(staging, packages)
    await timed('build', () => buildStaged(staging, packages))
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

    // The template, as a third party would have it after `git clone`.
    const project = join(temp, 'project')
    cpSync(join(ROOT, 'examples', 'third-party-backend'), project, {
      recursive: true,
      filter: (path) => !path.includes('node_modules'),
    })
    await timed('npm install', () =>
      sh(
        'npm',
        [
          'install',
          '--no-audit',
          '--no-fund',
          '--prefer-offline',
          // better-sqlite3 compiles its native addon from source here (no prebuilt binary can
          // be downloaded): minutes on a loaded 2-core box, for a backend this test never opens.
          // AGENT_STATE_PACKED_NATIVE=1 runs the install scripts too.
          ...(NATIVE ? [] : ['--ignore-scripts']),
          ...tarballs.values(),
        ],
        { cwd: project, env: USER },
      ),
    )

    const suite = await timed('template contract suite', () =>
      sh('npx', ['vitest', 'run'], { cwd: project, env: SMALL }),
    )
    // vitest's closing line, e.g. "Tests  64 passed | 9 skipped (73)": no failed test.
    const closing = suite.stdout.split('\n').find((line) => /^\s*Tests\s+\d+ passed/.test(line))
    expect(closing, suite.stdout.slice(-3000)).toBeDefined()
    expect(closing).not.toMatch(/failed/)

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

    const module = await timed('agent-state --module ./src/index.ts verify files:', () =>
      sh(bin, ['--module', './src/index.ts', 'verify', 'files:./verify-data'], {
        cwd: project,
        env: SMALL,
      }),
    )
    expect(module.stdout).toMatch(/total\s+passed \d+\s+failed 0/)

    // The runtime README's main examples, as a user runs TypeScript (tsx, installed with the CLI),
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
    expect(JSON.parse(runs.stdout).runs).toMatchObject([DEMO_RUN_ROW])

    console.log(`packed-install timings (s): ${JSON.stringify(timings)}`)
  })
})
