import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import ts from 'typescript'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RUNTIME_ERROR_CODES } from '../src/index.js'
import { PACKAGE_DIR } from './child-process.js'

const README = readFileSync(join(PACKAGE_DIR, 'README.md'), 'utf8')

/** The fenced blocks of one language, in order. */
function blocks(language: string): string[] {
  const fence = new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, 'gm')
  return [...README.matchAll(fence)].map((match) => match[1] ?? '')
}

/** Runs a command line exactly as written (no shell), in the package directory. */
function run(argv: readonly string[]): Promise<string> {
  const [command, ...args] = argv
  return new Promise((resolve, reject) => {
    const child = spawn(command === 'node' ? process.execPath : String(command), args, {
      cwd: PACKAGE_DIR,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      if (code === 0) resolve(stdout)
      else reject(new Error(`${argv.join(' ')} exited with ${code}: ${stderr}`))
    })
  })
}

describe('the runtime README', () => {
  let dataDir: string
  let codeDir: string
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'agent-state-readme-blocks-'))
    // Inside the package, so the blocks' imports resolve as a user's would.
    codeDir = mkdtempSync(join(PACKAGE_DIR, '.readme-blocks-'))
  })
  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true })
    rmSync(codeDir, { recursive: true, force: true })
  })

  const tsBlocks = blocks('ts')
  it('has TypeScript blocks to run', () => {
    expect(tsBlocks.length).toBeGreaterThanOrEqual(4)
  })

  it.each(tsBlocks.map((code, index) => ({ index, code })))(
    'ts block $index runs as written',
    async ({ index, code }) => {
      expect(code).toContain("'sqlite:./state.db'")
      // The only change: each block gets its own database file outside the checkout.
      const file = join(codeDir, `block-${index}.ts`)
      writeFileSync(
        file,
        code.replaceAll('sqlite:./state.db', `sqlite:${dataDir}/block-${index}.db`),
      )
      await run(['node', '--conditions=@agent-state/source', '--import', 'tsx', file])
    },
    60_000,
  )

  it('ts blocks type-check under the strict repository settings', () => {
    const files = tsBlocks.map((code, index) => {
      const file = join(codeDir, `typed-${index}.ts`)
      writeFileSync(file, code)
      return file
    })
    const configPath = join(PACKAGE_DIR, 'tsconfig.json')
    const config = ts.parseJsonConfigFileContent(
      ts.readConfigFile(configPath, ts.sys.readFile).config,
      ts.sys,
      PACKAGE_DIR,
    )
    const program = ts.createProgram(files, { ...config.options, noEmit: true })
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file === undefined || files.includes(d.file.fileName))
      .map((d) => {
        const where = d.file?.getLineAndCharacterOfPosition(d.start ?? 0)
        const text = ts.flattenDiagnosticMessageText(d.messageText, '\n')
        return `${d.file?.fileName ?? ''}:${(where?.line ?? 0) + 1}: ${text}`
      })
    expect(problems).toEqual([])
  }, 120_000)

  it('the example commands work as written, right after install', async () => {
    const [sh] = blocks('sh')
    const commands = (sh ?? '')
      .split('\n')
      .filter((line) => line.startsWith('node '))
      .map((line) => line.split('#')[0]?.trim().split(/\s+/) ?? [])
    expect(commands).toHaveLength(2)
    const db = `sqlite:${dataDir}/example.db`
    const substitute = (argv: string[], workerId = '') =>
      argv.map((arg) => (arg === 'sqlite:./state.db' ? db : arg === '<workerId>' ? workerId : arg))
    const [suspend = [], resume = []] = commands
    const suspension = JSON.parse((await run(substitute(suspend))).trim())
    const resumed = JSON.parse((await run(substitute(resume, suspension.handle.workerId))).trim())
    expect(resumed.status).toBe('done')
  }, 120_000)

  it('lists exactly the runtime error codes in its diagnostics table', () => {
    const section = README.slice(
      README.indexOf('\n## Error codes\n'),
      README.indexOf('\n## Caveats\n'),
    )
    const rows = section.split('\n').filter((line) => /^\| (HARN-SUS-\d{3}|—) /.test(line))
    const listed = new Set(
      rows.flatMap((row) =>
        [...(row.split('|').at(-2) ?? '').matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]),
      ),
    )
    expect([...listed].sort()).toEqual([...RUNTIME_ERROR_CODES].sort())
  })
})
