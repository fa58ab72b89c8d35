export { build, type Plugin } from 'esbuild'
export { bundleEntries, childTsxRequested, thirdPartyExternal } from './bundle-entries.js'
export {
  BUNDLE_DIR_PREFIX,
  processOutputRoot,
  RUN_DIR_ENV,
  removeStaleBundleDirs,
  STALE_AFTER_MS,
  startChildBundleRun,
} from './output-root.js'
