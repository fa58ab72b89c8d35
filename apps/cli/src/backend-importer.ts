/**
 * Loads backend packages from the CLI's own dependencies, so `openBackend`
 * finds them wherever `@agent-state/core` itself is installed.
 */
const loaders: Record<string, () => Promise<unknown>> = {
  '@agent-state/memory': () => import('@agent-state/memory'),
  '@agent-state/fs': () => import('@agent-state/fs'),
  '@agent-state/sqlite': () => import('@agent-state/sqlite'),
  '@agent-state/redis': () => import('@agent-state/redis'),
  '@agent-state/s3': () => import('@agent-state/s3'),
}

/** An `importer` for `openBackend` that resolves backend packages from the CLI. */
export async function importBackendPackage(packageName: string): Promise<unknown> {
  const load = loaders[packageName]
  if (load === undefined) throw new Error(`not a backend package: ${packageName}`)
  return load()
}
