/**
 * The checks of host-path-watch.test.ts run against deliberately broken
 * runtimes: each mutant must make its check see the failure it exists to
 * catch.
 */
import { afterEach, describe, expect, it } from 'vitest'
import {
  hostBurst,
  hostNotified,
  hostPathValidation,
  hostRemoval,
} from './host-path-watch-scenarios.js'
import { mutated, unmockAll } from './mutants.js'
import { WAKE_BACKENDS } from './wake-scenarios.js'

const HOST_WATCH = '../src/wake/host-path-watch.ts'

afterEach(unmockAll)

/** Mutant: changes coalesced into a pending path wake are forgotten (never named by a later wake). */
const forgetsCoalesced = () =>
  mutated(HOST_WATCH, (original) => ({ ...original, keepUnreported: () => new Set<string>() }))

/** Mutant: a missing directory scans as an empty one (its removal is never reported). */
const ignoresRemoval = () =>
  mutated(HOST_WATCH, (original) => {
    const scan = original.scanHostDir as (dir: string) => Promise<Map<string, string> | null>
    return { ...original, scanHostDir: async (dir: string) => (await scan(dir)) ?? new Map() }
  })

/** Mutant: no `fs.watch` (only the rescans every `pollMs` see changes). */
const noNotifier = () =>
  mutated(HOST_WATCH, (original) => ({
    ...original,
    hostDirNotifier: () => ({ open: () => null, close: () => undefined }),
  }))

/** Mutant: `watchPaths` entries are not validated at spawn. */
const noValidation = () =>
  mutated(HOST_WATCH, (original) => ({ ...original, assertWatchPaths: () => undefined }))

describe.each(WAKE_BACKENDS)('host-directory watchPaths mutants on $name', (kind) => {
  it('coalesced changes forgotten: the burst files written while the first wake was pending are never named', async () => {
    const outcome = await hostBurst(await forgetsCoalesced(), kind)
    expect(outcome.events).toBe(1)
    expect(outcome.missing).toBe(99)
  })

  it('removal ignored: no path_removed for the missing, removed or replaced folder', async () => {
    const outcome = await hostRemoval(await ignoresRemoval(), kind)
    expect(outcome.atStart).toEqual([0, 0])
    expect(outcome.afterRemove).toEqual([0, 0])
    expect(outcome.afterReplaced).toEqual([0, 0])
  })

  it('no fs.watch: the deep write wakes nothing with a one-hour rescan', async () => {
    // Without the notifier nothing can wake it before the one-hour rescan, so a 1 s window suffices.
    expect(await hostNotified(await noNotifier(), kind, 1000)).toEqual({
      woken: false,
      warnings: [],
    })
  })

  it('no validation: relative and ambiguous host paths are accepted', async () => {
    const outcome = await hostPathValidation(await noValidation(), kind)
    expect(outcome.absolutePath).toBeNull()
    expect(outcome.relativePath).toBeNull()
    expect(outcome.fileHost).toBeNull()
  })
})
