export {
  describeLoops,
  type FindImportLoopsOptions,
  findImportLoops,
  type ImportLoop,
  repositoryModules,
  SOURCE_EXTENSIONS,
} from './import-loops.js'
