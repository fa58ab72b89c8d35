import { readFileSync } from 'node:fs'
import {
  checkPackage,
  createPackageFromTarballData,
  type ResolutionKind,
} from '@arethetypeswrong/core'
import { problemAffectsResolutionKind, problemKindInfo } from '@arethetypeswrong/core/problems'
import { allResolutionKinds } from '@arethetypeswrong/core/utils'

/**
 * What attw's `esm-only` profile leaves out: CommonJS resolution (`node10`, and `node16` from
 * CJS). The packages are ESM only (`"type": "module"`, `exports` with no `require`), so a CommonJS
 * consumer cannot load them at all; what must hold is node16 from ESM and bundlers.
 */
export const ESM_ONLY_IGNORED: readonly ResolutionKind[] = ['node10', 'node16-cjs']

/**
 * What "Are the types wrong?" (`@arethetypeswrong/core`) says of a packed tarball under the
 * `esm-only` profile, as readable lines; empty means clean. A package without types, or with
 * no entrypoint to check, is a finding too. A problem is left out only when every resolution it
 * shows in is one the profile ignores; one that shows in none (a file-level problem) is kept.
 */
export async function typeCheckTarball(tarball: string): Promise<string[]> {
  return typeCheckData(new Uint8Array(readFileSync(tarball)))
}

/** {@link typeCheckTarball} on a gzipped tarball's bytes. */
export async function typeCheckData(data: Uint8Array): Promise<string[]> {
  const analysis = await checkPackage(createPackageFromTarballData(data))
  if (analysis.types === false) return ['untyped: the package ships no type definitions']
  // Nothing analysed would report nothing: that is a finding, not a pass.
  if (Object.keys(analysis.entrypoints).length === 0) return ['no entrypoint found to check']
  const checked = allResolutionKinds.filter((kind) => !ESM_ONLY_IGNORED.includes(kind))
  return analysis.problems
    .filter((problem) => {
      const shown = allResolutionKinds.filter((kind) =>
        problemAffectsResolutionKind(problem, kind, analysis),
      )
      return shown.length === 0 || shown.some((kind) => checked.includes(kind))
    })
    .map((problem) => {
      const where = allResolutionKinds.filter((kind) =>
        problemAffectsResolutionKind(problem, kind, analysis),
      )
      const entrypoint = 'entrypoint' in problem ? ` ${problem.entrypoint}` : ''
      return `${problem.kind}${entrypoint} [${where.join(', ')}]: ${problemKindInfo[problem.kind].shortDescription}`
    })
}
