import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { readmeBlocks } from '@agent-state/readme-blocks'
import { ROOT } from './staging.js'

/** The template's directory in the checkout. */
export const TEMPLATE = join(ROOT, 'examples', 'third-party-backend')

/**
 * The command lines of the template README's `## Steps`, in order, each as its words: every
 * `sh` block there, one command a line. A line a plain word split cannot run as written (quotes,
 * `$`, pipes, globs) fails here, so what runs is what the README says, word for word.
 */
export function templateSteps(): string[][] {
  const blocks = readmeBlocks(join(TEMPLATE, 'README.md')).filter(
    (block) => block.language === 'sh' && block.heading === '## Steps',
  )
  if (blocks.length === 0) throw new Error('the template README has no sh block under ## Steps')
  const lines = blocks.flatMap((block) => block.code.split('\n')).map((line) => line.trim())
  return lines
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      if (/["'$`|&;<>*?\\]/.test(line))
        throw new Error(`a step the test cannot run as written: ${line}`)
      return line.split(/\s+/)
    })
}

/**
 * The README's `js` block under `## Steps` (what `open-by-url.mjs` does), checked to be the
 * file's own text, so the README shows what the step runs.
 */
export function checkOpenByUrlBlock(): void {
  const block = readmeBlocks(join(TEMPLATE, 'README.md')).find(
    (b) => b.language === 'js' && b.heading === '## Steps',
  )
  if (block === undefined) throw new Error('the template README has no js block under ## Steps')
  const file = readFileSync(join(TEMPLATE, 'open-by-url.mjs'), 'utf8')
  if (!file.includes(block.code)) {
    throw new Error('the template README shows an open-by-url.mjs that is not the file')
  }
}
