import { readFileSync } from 'node:fs'

/** One fenced code block of a Markdown file. */
export interface ReadmeBlock {
  /** The fence's language (`ts`, `sh`, ...), lower-cased; `""` when the fence names none. */
  readonly language: string
  /**
   * Words after the language in the fence's info string (```` ```ts no-run ````), for the
   * few blocks a test must treat differently. What each flag means is the test's call.
   */
  readonly flags: readonly string[]
  /** The block's text, without the fences. */
  readonly code: string
  /** 1-based line of the opening fence, for failure messages. */
  readonly line: number
  /** The nearest heading above the block (`"## Options"`), or `""`. */
  readonly heading: string
}

/**
 * Every fenced block of a Markdown text, in order. Only back-tick fences at the
 * start of a line are recognised (the only kind our READMEs use); an unclosed
 * fence is an error rather than a silently lost block.
 */
export function parseBlocks(markdown: string): ReadmeBlock[] {
  const lines = markdown.split('\n')
  const blocks: ReadmeBlock[] = []
  let heading = ''
  for (let index = 0; index < lines.length; index++) {
    const text = lines[index] ?? ''
    if (/^#{1,6} /.test(text)) heading = text.trim()
    const open = /^(`{3,})(.*)$/.exec(text)
    if (open === null) continue
    const fence = open[1] ?? '```'
    const [language = '', ...flags] = (open[2] ?? '').trim().split(/\s+/).filter(Boolean)
    const openedAt = index + 1
    const body: string[] = []
    let closed = false
    for (index++; index < lines.length; index++) {
      const inner = lines[index] ?? ''
      if (inner.trimEnd() === fence) {
        closed = true
        break
      }
      body.push(inner)
    }
    if (!closed) throw new Error(`unclosed code fence opened at line ${openedAt}`)
    blocks.push({
      language: language.toLowerCase(),
      flags,
      code: body.length === 0 ? '' : `${body.join('\n')}\n`,
      line: openedAt,
      heading,
    })
  }
  return blocks
}

/** The fenced blocks of a README file (see {@link parseBlocks}). */
export function readmeBlocks(readmePath: string): ReadmeBlock[] {
  return parseBlocks(readFileSync(readmePath, 'utf8'))
}
