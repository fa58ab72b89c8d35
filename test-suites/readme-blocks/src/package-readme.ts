import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseBlocks, type ReadmeBlock } from './blocks.js'
import { type OptionsTableRow, optionsTableFields } from './options-table.js'
import { typecheckBlocks } from './typecheck-blocks.js'

/** A package's README, read once for its `test/readme.test.ts`. */
export interface PackageReadme {
  /** The package's directory (absolute, with a trailing separator). */
  readonly packageDir: string
  /** `README.md` of the package. */
  readonly path: string
  /** The README's text. */
  readonly markdown: string
  /** Every fenced block, in order. */
  readonly blocks: readonly ReadmeBlock[]
  /** The `ts` blocks, in order. */
  readonly tsBlocks: readonly ReadmeBlock[]
  /** {@link typecheckBlocks} of the `ts` blocks under the package's tsconfig: empty when clean. */
  typecheck(): string[]
  /** {@link optionsTableFields} of the README: the options table under `heading` (`## Options`). */
  optionsTable(heading: string): OptionsTableRow[]
}

/**
 * The README of the package whose `test/` directory holds the calling test file (pass
 * `import.meta.url`), with its blocks: what every package's README test starts from.
 */
export function packageReadme(testFileUrl: string): PackageReadme {
  const packageDir = fileURLToPath(new URL('..', testFileUrl))
  const path = join(packageDir, 'README.md')
  const markdown = readFileSync(path, 'utf8')
  const blocks = parseBlocks(markdown)
  const tsBlocks = blocks.filter((block) => block.language === 'ts')
  return {
    packageDir,
    path,
    markdown,
    blocks,
    tsBlocks,
    typecheck: () =>
      typecheckBlocks(
        tsBlocks.map((block) => block.code),
        { packageDir },
      ),
    optionsTable: (heading) => optionsTableFields(markdown, heading),
  }
}
