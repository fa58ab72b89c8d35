import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'

/** Options of {@link typecheckBlocks}. */
export interface TypecheckBlocksOptions {
  /** The package whose tsconfig and dependencies the blocks are checked against. */
  readonly packageDir: string
  /** The tsconfig to use, relative to `packageDir`. Default `tsconfig.json`. */
  readonly tsconfig?: string
}

/**
 * Type-checks TypeScript blocks under the package's strict settings, each as
 * its own module inside the package (so imports resolve as a user's would).
 * Returns the problems as `block <n> line <l>: <message>`; empty means clean.
 */
export function typecheckBlocks(
  blocks: readonly string[],
  options: TypecheckBlocksOptions,
): string[] {
  const dir = mkdtempSync(join(options.packageDir, '.readme-typecheck-'))
  try {
    const files = blocks.map((code, index) => {
      const file = join(dir, `block-${index}.ts`)
      // `export {}` keeps each block a module even when it imports nothing.
      writeFileSync(file, `${code}\nexport {}\n`)
      return file
    })
    const configPath = join(options.packageDir, options.tsconfig ?? 'tsconfig.json')
    const config = ts.parseJsonConfigFileContent(
      ts.readConfigFile(configPath, ts.sys.readFile).config,
      ts.sys,
      options.packageDir,
    )
    const program = ts.createProgram(files, { ...config.options, noEmit: true })
    return ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file === undefined || files.includes(d.file.fileName))
      .map((d) => {
        const where = d.file?.getLineAndCharacterOfPosition(d.start ?? 0)
        const block = d.file === undefined ? -1 : files.indexOf(d.file.fileName)
        const text = ts.flattenDiagnosticMessageText(d.messageText, '\n')
        return `block ${block} line ${(where?.line ?? 0) + 1}: ${text}`
      })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
