export { parseBlocks, type ReadmeBlock, readmeBlocks } from './blocks.js'
export {
  type OptionsSchemaLike,
  type OptionsTableRow,
  optionsTableFields,
  optionsTableProblems,
} from './options-table.js'
export { type PackageReadme, packageReadme } from './package-readme.js'
export {
  type CommandResult,
  type RunCommandOptions,
  type RunTsBlockOptions,
  runCommand,
  runTsBlock,
} from './run-block.js'
export { type TypecheckBlocksOptions, typecheckBlocks } from './typecheck-blocks.js'
