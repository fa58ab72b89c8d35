import { type ChildProcess, execFile, spawn } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import {
  BUNDLE_DIR_PREFIX,
  bundleEntries,
  processOutputRoot,
  RUN_DIR_ENV,
  removeStaleBundleDirs,
  startChildBundleRun,
} from '../src/index.js'

const run = promisify(execFile)
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'agent-state-child-bundles-test-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('bundleEntries', () => {
  it('bundles workspace TypeScript, keeps third-party packages external, and builds once', async () => {
    const src = join(scratch, 'src')
    mkdirSync(src)
    writeFileSync(join(src, 'shared.ts'), 'export const greeting: string = "hello from shared"\n')
    writeFileSync(
      join(src, 'main.ts'),
      [
        "import { version } from 'esbuild'",
        "import { greeting } from './shared.js'",
        'console.log(greeting, typeof version)',
        '',
      ].join('\n'),
    )
    writeFileSync(
      join(src, 'other.ts'),
      "import { greeting } from './shared.js'\nconsole.log(greeting.length)\n",
    )
    // esbuild resolves `esbuild` from the importer: make the entry's directory see this package's.
    mkdirSync(join(scratch, 'node_modules'))
    symlinkSync(
      realpathSync(join(PACKAGE_DIR, 'node_modules', 'esbuild')),
      join(scratch, 'node_modules', 'esbuild'),
    )

    const entries = { main: join(src, 'main.ts'), other: join(src, 'other.ts') }
    const outdir = await bundleEntries(entries, 'unit')
    expect(dirname(outdir)).toBe(processOutputRoot())
    expect(basename(outdir).startsWith('unit-')).toBe(true)
    const { stdout } = await run(process.execPath, [join(outdir, 'main.mjs')])
    expect(stdout).toBe('hello from shared string\n')
    const { stdout: other } = await run(process.execPath, [join(outdir, 'other.mjs')])
    expect(other).toBe('17\n')
    // The third-party package is imported from its own file, not copied into the bundle.
    const main = readFileSync(join(outdir, 'main.mjs'), 'utf8')
    expect(main).toMatch(/from "\/[^"]*esbuild[^"]*\.js"/)
    // Same entries (in any order): the same bundle, not a second build.
    expect(await bundleEntries({ other: entries.other, main: entries.main }, 'unit')).toBe(outdir)
  })

  it('fails on a file that does not compile, and does not cache the failure', async () => {
    const broken = join(scratch, 'broken.ts')
    writeFileSync(broken, 'const = 1\n')
    await expect(bundleEntries({ main: broken }, 'broken')).rejects.toThrow(
      /cannot bundle .*broken\.ts/,
    )
    writeFileSync(broken, 'console.log(1)\n')
    const outdir = await bundleEntries({ main: broken }, 'broken')
    expect(existsSync(join(outdir, 'main.mjs'))).toBe(true)
  })
})

describe('removeStaleBundleDirs', () => {
  it('removes only bundle directories untouched for a day whose creator is gone', async () => {
    const gone = spawn(process.execPath, ['-e', ''])
    await new Promise((resolve) => gone.once('exit', resolve))
    const parent = mkdtempSync(join(scratch, 'sweep-'))
    const now = Date.now()
    const dayAndAMinute = (24 * 60 + 1) * 60 * 1000
    const make = (name: string, ageMs: number): string => {
      const path = join(parent, name)
      mkdirSync(path)
      writeFileSync(join(path, 'main.mjs'), '')
      const when = new Date(now - ageMs)
      utimesSync(path, when, when)
      return path
    }
    const old = make(`${BUNDLE_DIR_PREFIX}old`, dayAndAMinute)
    const legacy = make('agent-state-contract-children-old', dayAndAMinute)
    const fresh = make(`${BUNDLE_DIR_PREFIX}fresh`, 23 * 60 * 60 * 1000)
    const unrelated = make('someone-elses-old', dayAndAMinute)
    const deadCreator = make(`${BUNDLE_DIR_PREFIX}${gone.pid}-AbC123`, dayAndAMinute)
    const liveCreator = make(`${BUNDLE_DIR_PREFIX}${process.pid}-AbC123`, dayAndAMinute)
    writeFileSync(join(parent, `${BUNDLE_DIR_PREFIX}a-file`), '')
    utimesSync(join(parent, `${BUNDLE_DIR_PREFIX}a-file`), new Date(0), new Date(0))
    expect(removeStaleBundleDirs({ parent, now }).sort()).toEqual([deadCreator, legacy, old].sort())
    expect([old, legacy, deadCreator].map(existsSync)).toEqual([false, false, false])
    expect([fresh, unrelated, liveCreator].map(existsSync)).toEqual([true, true, true])
    expect(existsSync(join(parent, `${BUNDLE_DIR_PREFIX}a-file`))).toBe(true)
  })
})

const started: ChildProcess[] = []
// A failed assertion must not leave a waiting fixture behind.
afterEach(() => {
  for (const child of started.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})

/** Starts the fixture that makes its bundle directory and waits; resolves the child and the directory. */
async function holdOutputRoot(env: NodeJS.ProcessEnv) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(PACKAGE_DIR, 'test/fixtures/hold-output-root.ts')],
    { cwd: PACKAGE_DIR, env, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  started.push(child)
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => resolve(signal)),
  )
  const dir = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.endsWith('\n')) resolve(out.trim())
    })
    child.once('exit', (code) => reject(new Error(`child exited with ${code}`)))
  })
  return { child, exited, dir }
}

describe('processOutputRoot', () => {
  it('is removed when the process gets SIGTERM (how vitest stops its workers), which still ends it', async () => {
    const env = { ...process.env }
    delete env[RUN_DIR_ENV]
    const { child, exited, dir } = await holdOutputRoot(env)
    expect(dirname(dir)).toBe(tmpdir())
    expect(basename(dir).startsWith(`${BUNDLE_DIR_PREFIX}${child.pid}-`)).toBe(true)
    expect(existsSync(dir)).toBe(true)
    child.kill('SIGTERM')
    expect(await exited).toBe('SIGTERM')
    expect(existsSync(dir)).toBe(false)
  })
})

describe('startChildBundleRun', () => {
  it("gives the run one directory that holds a killed process's bundles until teardown", async () => {
    const before = process.env[RUN_DIR_ENV]
    const end = startChildBundleRun()
    const runDir = process.env[RUN_DIR_ENV] as string
    try {
      expect(dirname(runDir)).toBe(tmpdir())
      expect(basename(runDir).startsWith(BUNDLE_DIR_PREFIX)).toBe(true)
      const { child, exited, dir: childDir } = await holdOutputRoot({ ...process.env })
      expect(dirname(childDir)).toBe(runDir)
      child.kill('SIGKILL')
      expect(await exited).toBe('SIGKILL')
      // No exit handler ran: the killed process's directory is still there...
      expect(existsSync(childDir)).toBe(true)
    } finally {
      end()
    }
    // ...and goes with the run's.
    expect(existsSync(runDir)).toBe(false)
    expect(process.env[RUN_DIR_ENV]).toBe(before)
  })
})
