import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseBlocks } from '@agent-state/readme-blocks'
import { describe, expect, it } from 'vitest'

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url))

/** Every Markdown file a reader may follow: all of them but node_modules and changesets. */
function markdownFiles(dir = REPO_ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory())
      return entry.name === 'node_modules' || entry.name.startsWith('.') ? [] : markdownFiles(path)
    return entry.name.endsWith('.md') ? [relative(REPO_ROOT, path)] : []
  })
}

/** `pnpm` as a command word: at the start of the code or after a space, `(`, `|`, `&` or `;`. */
const BARE_PNPM = /(^|[\s(|&;])pnpm(?=\s|$)/

/**
 * The code a reader would type, from a Markdown text: each line of every fenced block, and every
 * inline code span (`` `pnpm test` ``). Prose ("pnpm 12.4.2 workspaces") is not a command.
 */
function codeSnippets(markdown: string): string[] {
  const lines = markdown.split('\n')
  const fenced = new Set<number>()
  const snippets: string[] = []
  for (const block of parseBlocks(markdown)) {
    const body = block.code.split('\n').slice(0, -1)
    body.forEach((line, offset) => {
      fenced.add(block.line + offset)
      snippets.push(line)
    })
    fenced.add(block.line - 1)
    fenced.add(block.line + body.length)
  }
  lines.forEach((line, index) => {
    if (fenced.has(index)) return
    for (const span of line.matchAll(/`([^`]+)`/g)) snippets.push(span[1] ?? '')
  })
  return snippets
}

/** The bare pnpm commands of a Markdown text, as the code snippet that holds each. */
function barePnpmCommands(markdown: string): string[] {
  return codeSnippets(markdown)
    .map((snippet) => snippet.split(/\s+#\s/)[0]?.trim() ?? '')
    .filter((snippet) => BARE_PNPM.test(snippet))
}

describe('no README or doc shows a bare pnpm command', () => {
  it('finds the commands it must find (and not the ones that work)', () => {
    const sample = [
      'Run `pnpm test`, or `npx -y pnpm@12.4.2 test`; pnpm 12.4.2 workspaces.',
      '```sh',
      'cd benchmarks && pnpm report    # rebuild',
      'npx -y pnpm@12.4.2 --filter @agent-state/cli test',
      "BENCH_ONLY='^x$' pnpm bench",
      '```',
    ].join('\n')
    expect(barePnpmCommands(sample)).toEqual([
      'cd benchmarks && pnpm report',
      "BENCH_ONLY='^x$' pnpm bench",
      'pnpm test',
    ])
  })

  it('scans every Markdown file of the repository', () => {
    const files = markdownFiles()
    expect(files).toContain('README.md')
    expect(files).toContain('CONTRIBUTING.md')
    expect(files).toContain('docs/contract.md')
    expect(files).toContain('apps/cli/README.md')
    expect(files.filter((file) => file.endsWith('README.md')).length).toBeGreaterThanOrEqual(15)
  })

  it('every command is npx -y pnpm@12.4.2 …', () => {
    const unexpected: Record<string, string[]> = {}
    for (const file of markdownFiles()) {
      const commands = barePnpmCommands(readFileSync(join(REPO_ROOT, file), 'utf8'))
      if (commands.length > 0) unexpected[file] = commands
    }
    expect(unexpected).toEqual({})
  })
})
