/** One command line of a README `sh` block, split as a POSIX shell would for the forms we use. */
export interface ShellLine {
  /** The words of the first command, quotes removed. */
  readonly argv: readonly string[]
  /** The words after an unquoted `|`, if any. */
  readonly pipeTo: readonly string[] | undefined
  /** The file after an unquoted `>`, if any. */
  readonly redirectTo: string | undefined
  /** The text after an unquoted `#`, trimmed (`""` when none). */
  readonly comment: string
}

/**
 * Splits one line into words: whitespace separates, single quotes quote, an
 * unquoted `#` at the start of a word starts the comment, `|` and `>` are
 * operators. Anything else a shell would interpret (`$`, `*`, double quotes,
 * `;`, `&`) is refused, so a README line this cannot read fails its test
 * instead of running as something else.
 */
export function parseShellLine(line: string): ShellLine {
  const words: string[] = []
  let word: string | undefined
  let index = 0
  let comment = ''
  for (; index < line.length; index++) {
    const char = line[index] as string
    if (char === "'") {
      const end = line.indexOf("'", index + 1)
      if (end === -1) throw new Error(`unclosed quote in: ${line}`)
      word = (word ?? '') + line.slice(index + 1, end)
      index = end
    } else if (/\s/.test(char)) {
      if (word !== undefined) words.push(word)
      word = undefined
    } else if (char === '#' && word === undefined) {
      comment = line.slice(index + 1).trim()
      break
    } else if ((char === '|' || char === '>') && word === undefined) {
      words.push(char)
    } else if (/[$*"`;&\\]/.test(char)) {
      throw new Error(`shell syntax this test does not read (${char}) in: ${line}`)
    } else {
      word = (word ?? '') + char
    }
  }
  if (word !== undefined) words.push(word)
  const pipe = words.indexOf('|')
  const redirect = words.indexOf('>')
  if (pipe !== -1 && redirect !== -1) throw new Error(`both | and > in: ${line}`)
  if (redirect !== -1 && redirect !== words.length - 2)
    throw new Error(`> must name one file at the end: ${line}`)
  const end = pipe !== -1 ? pipe : redirect !== -1 ? redirect : words.length
  return {
    argv: words.slice(0, end),
    pipeTo: pipe === -1 ? undefined : words.slice(pipe + 1),
    redirectTo: redirect === -1 ? undefined : words[redirect + 1],
    comment,
  }
}

/** The lines of an `sh` block that hold a command (blank lines and whole-line comments dropped). */
export function shellLines(code: string): ShellLine[] {
  return code
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'))
    .map(parseShellLine)
}

/**
 * The arguments after the command name of an `agent-state` line, written either
 * as `agent-state …` (installed) or `npx -y pnpm@12.4.2 agent-state …` (a checkout).
 */
export function agentStateArgs(line: ShellLine): readonly string[] {
  const { argv } = line
  if (argv[0] === 'agent-state') return argv.slice(1)
  const pnpm = ['npx', '-y', 'pnpm@12.4.2', 'agent-state']
  if (pnpm.every((word, index) => argv[index] === word)) return argv.slice(pnpm.length)
  throw new Error(`not an agent-state command: ${argv.join(' ')}`)
}
