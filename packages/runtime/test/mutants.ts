/**
 * The runtime tests' mutant harness: a runtime imported afresh with one
 * module replaced (vi.doMock), so a scenario written against a runtime
 * module runs against a deliberately broken one. Shared by the *-mutants
 * test files.
 */
import { vi } from 'vitest'
import type * as RuntimeModule from '../src/index.js'

/** The runtime module a scenario runs against (the real one, or one with a mutated module). */
export type Runtime = typeof RuntimeModule

/** Every module path a test file mocked, so {@link unmockAll} undoes them after each test. */
const mocked = new Set<string>()

/**
 * The runtime with `path` (relative to test/, as `vi.doMock` takes it)
 * replaced by what `mutate` makes of the original module.
 */
export async function mutated(
  path: string,
  mutate: (original: Record<string, unknown>) => Record<string, unknown>,
): Promise<Runtime> {
  vi.resetModules()
  mocked.add(path)
  vi.doMock(path, async (importOriginal) => mutate(await importOriginal<Record<string, unknown>>()))
  return (await import('../src/index.js')) as Runtime
}

/** Undoes every {@link mutated} replacement: call it in `afterEach`. */
export function unmockAll(): void {
  for (const path of mocked) vi.doUnmock(path)
  mocked.clear()
  vi.resetModules()
}
