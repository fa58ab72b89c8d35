import { join } from 'node:path'
import { readmeBlocks } from '@agent-state/readme-blocks'
import { ROOT } from './staging.js'

/** A README block as the packed project runs it. */
export interface ReadmeExample {
  /** The heading above the block, for failure messages. */
  readonly heading: string
  readonly code: string
}

/**
 * The runtime README's main examples: its first two `ts` blocks (`## Sessions`, then
 * `## Workers: suspend and resume`), found by heading so that a moved block fails here rather than
 * running something else. `sqlite:./state.db`, the URL they are written for, becomes `url` (a
 * file backend by default: the packed install skips better-sqlite3's native build, see README);
 * a block that no longer names it fails.
 */
export function runtimeReadmeExamples(url: string): ReadmeExample[] {
  const blocks = readmeBlocks(join(ROOT, 'packages', 'runtime', 'README.md'))
  return ['## Sessions', '## Workers: suspend and resume'].map((heading) => {
    const block = blocks.find((b) => b.language === 'ts' && b.heading === heading)
    if (block === undefined) throw new Error(`the runtime README has no ts block under ${heading}`)
    if (!block.code.includes("'sqlite:./state.db'")) {
      throw new Error(
        `the runtime README's block under ${heading} no longer opens sqlite:./state.db`,
      )
    }
    return { heading, code: block.code.replaceAll("'sqlite:./state.db'", `'${url}'`) }
  })
}
