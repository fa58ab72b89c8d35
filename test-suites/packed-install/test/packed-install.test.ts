import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { lint, lintTarball } from './lint-package.js'
import {
  buildStaged,
  packStaged,
  publishablePackages,
  ROOT,
  sh,
  stageWorkspace,
} from './staging.js'

// Everything happens in the system temp directory, outside the workspace: no pnpm workspace,
// no @agent-state/source condition, nothing but what npm installs from the tarballs.
const temp = mkdtempSync(join(tmpdir(), 'agent-state-packed-'))
afterAll(() => rmSync(temp, { recursive: true, force: true }))

const SMALL = {
  AGENT_STATE_CONTRACT_INSTANCES: '16',
  AGENT_STATE_CONTRACT_INCREMENTS: '3',
}
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

describe('the published packages, installed with npm outside the workspace', () => {
  it('build, pack, install, and run: the template suite, the README example, verify', async () => {
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
          ...(process.env.AGENT_STATE_PACKED_NATIVE === '1' ? [] : ['--ignore-scripts']),
          ...tarballs.values(),
        ],
        { cwd: project },
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
        env: { AGENT_STATE_URL: `file:${exampleDir}` },
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

    console.log(`packed-install timings (s): ${JSON.stringify(timings)}`)
  })
})
