import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import {
  packageReadme,
  parseBlocks,
  readmeBlocks,
  runCommand,
  runTsBlock,
  typecheckBlocks,
} from '../src/index.js'

const packageDir = fileURLToPath(new URL('..', import.meta.url))

describe('parseBlocks', () => {
  it('reads language, flags, code, line and heading of each block', () => {
    const markdown = [
      '# Title',
      '## Use',
      '```ts no-run',
      "const a = 'x'",
      '```',
      'text',
      '```sh',
      'node x.js',
      '```',
    ].join('\n')
    expect(parseBlocks(markdown)).toEqual([
      { language: 'ts', flags: ['no-run'], code: "const a = 'x'\n", line: 3, heading: '## Use' },
      { language: 'sh', flags: [], code: 'node x.js\n', line: 7, heading: '## Use' },
    ])
  })

  it('refuses an unclosed fence instead of losing the block', () => {
    expect(() => parseBlocks('x\n```ts\nconst a = 1\n')).toThrow(
      'unclosed code fence opened at line 2',
    )
  })
})

describe('runTsBlock', () => {
  it('runs a block and reports its output and exit code', async () => {
    const ok = await runTsBlock("console.log('from ' + 'TARGET')\n", {
      cwd: packageDir,
      substitutions: { TARGET: 'the test' },
    })
    expect(ok).toMatchObject({ exitCode: 0, stdout: 'from the test\n' })
    const broken = await runTsBlock("throw new Error('broken block')\n", { cwd: packageDir })
    expect(broken.exitCode).toBe(1)
    expect(broken.stderr).toContain('broken block')
  })

  it('fails when a substitution no longer matches the block', async () => {
    await expect(
      runTsBlock('console.log(1)\n', { cwd: packageDir, substitutions: { 'sqlite:./x.db': 'y' } }),
    ).rejects.toThrow('the block no longer contains "sqlite:./x.db"')
  })
})

describe('typecheckBlocks', () => {
  it('passes a correct block and names the block and line of a wrong one', () => {
    expect(typecheckBlocks(['const n: number = 1\nconsole.log(n)\n'], { packageDir })).toEqual([])
    const problems = typecheckBlocks(
      ['console.log(1)\n', 'console.log(1)\nconst n: number = "x"\nconsole.log(n)\n'],
      {
        packageDir,
      },
    )
    expect(problems).toHaveLength(1)
    expect(problems[0]).toMatch(/^block 1 line 2: Type 'string' is not assignable to type 'number'/)
  })
})

describe('runCommand', () => {
  it('runs `node` as this Node, without a shell', async () => {
    const result = await runCommand(['node', '-e', 'process.stdout.write(process.version)'], {
      cwd: packageDir,
    })
    expect(result).toMatchObject({ exitCode: 0, stdout: process.version })
  })

  it("drops this process's NODE_PATH unless told to keep it; one given in env is passed", async () => {
    const printNodePath = ['node', '-e', 'process.stdout.write(String(process.env.NODE_PATH))']
    const before = process.env.NODE_PATH
    process.env.NODE_PATH = '/workspace/hoisted/node_modules'
    try {
      const dropped = await runCommand(printNodePath, { cwd: packageDir })
      expect(dropped).toMatchObject({ exitCode: 0, stdout: 'undefined' })
      const kept = await runCommand(printNodePath, { cwd: packageDir, keepNodePath: true })
      expect(kept.stdout).toBe('/workspace/hoisted/node_modules')
      const given = await runCommand(printNodePath, { cwd: packageDir, env: { NODE_PATH: '/x' } })
      expect(given.stdout).toBe('/x')
      // runTsBlock runs through runCommand: the same default.
      const block = await runTsBlock('console.log(String(process.env.NODE_PATH))\n', {
        cwd: packageDir,
      })
      expect(block).toMatchObject({ exitCode: 0, stdout: 'undefined\n' })
    } finally {
      if (before === undefined) delete process.env.NODE_PATH
      else process.env.NODE_PATH = before
    }
  })
})

describe("this package's README, through packageReadme", () => {
  it('has blocks that type-check', () => {
    const readme = packageReadme(import.meta.url)
    expect(readme.packageDir).toBe(packageDir)
    expect(readme.blocks).toEqual(readmeBlocks(readme.path))
    expect(readme.tsBlocks.length).toBeGreaterThanOrEqual(1)
    expect(readme.tsBlocks.every((block) => block.language === 'ts')).toBe(true)
    expect(readme.typecheck()).toEqual([])
    // This README has no options table: asking for one names what is missing.
    expect(() => readme.optionsTable('## Options')).toThrow('no heading "## Options"')
  })
})
