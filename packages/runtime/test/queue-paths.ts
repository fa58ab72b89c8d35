import type { BackendFactory, MultiProcessBackend } from '@agent-state/backend-targets'
import type { Backend } from '@agent-state/core'
import {
  createDaemonQueue as createOnDefaultPath,
  type DaemonQueue,
  type DaemonQueueOptions,
} from '../src/index.js'

/** A daemon queue path (docs/runtime/daemons.md, "Queue paths"). */
export type QueuePath = 'generic' | 'native'

/**
 * The backends whose test targets offer the `nativeQueue` capability: their
 * queue suites run on both paths. Named here (not probed) so a backend that
 * silently lost the capability fails its native run with
 * `QUEUE_PATH_UNAVAILABLE` instead of dropping out of it.
 */
export const NATIVE_QUEUE_BACKENDS: readonly string[] = ['sqlite', 'redis', 'postgres']

/** A backend target with the path its queues are created on. */
export type OnPath<T> = T & { readonly path: QueuePath }

/**
 * Every target on the generic path, plus a `<name> native` run of each
 * target in {@link NATIVE_QUEUE_BACKENDS}: the queue suites are written once
 * and parameterised with the path.
 */
export function withQueuePaths<T extends BackendFactory | MultiProcessBackend>(
  targets: readonly T[],
  paths: readonly QueuePath[] = ['generic', 'native'],
): OnPath<T>[] {
  const out: OnPath<T>[] = []
  for (const target of targets) {
    if (paths.includes('generic')) out.push({ ...target, path: 'generic' } as OnPath<T>)
    if (paths.includes('native') && NATIVE_QUEUE_BACKENDS.includes(target.name)) {
      const renamed = { ...target, name: `${target.name} native` } as T
      out.push({ ...renamed, path: 'native' } as OnPath<T>)
    }
  }
  return out
}

/** `createDaemonQueue` on `path` (the suites' creations all go through it). */
export function createOnPath(path: QueuePath) {
  return (
    backend: Backend,
    daemonId: string,
    options: DaemonQueueOptions = {},
    clock?: () => number,
  ): Promise<DaemonQueue> => createOnDefaultPath(backend, daemonId, { ...options, path }, clock)
}
