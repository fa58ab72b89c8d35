/**
 * Host-directory `watchPaths` on the memory backend and the filesystem:
 * a 100-file burst coalesced with no lost change, a removed watched folder
 * reported, and the entries' validation. Each check is also run against a
 * broken runtime in host-path-watch-mutants.test.ts.
 */
import { describe, expect, it } from 'vitest'
import * as runtime from '../src/index.js'
import { WAKE_WINDOW_MS } from './daemon-wake-scenarios.js'
import {
  hostBurst,
  hostNotified,
  hostPathValidation,
  hostRemoval,
} from './host-path-watch-scenarios.js'
import { WAKE_BACKENDS } from './wake-scenarios.js'

describe.each(WAKE_BACKENDS)('host-directory watchPaths on $name', (kind) => {
  it('100 files in a burst: two coalesced events, the last names every file written while the first was pending', async () => {
    expect(await hostBurst(runtime, kind)).toEqual({
      events: 2,
      firstPaths: 1,
      lastPaths: 99,
      missing: 0,
      morePaths: 0,
      pathWakeLeft: false,
    })
  })

  it('a missing, removed or replaced watched folder is reported once per disappearance and watched for again', async () => {
    expect(await hostRemoval(runtime, kind)).toEqual({
      atStart: [0, 1],
      afterRemove: [1, 1],
      removedFiles: ['kept/a.txt', 'kept/sub/b.txt'],
      afterRescans: [1, 1],
      reappeared: ['kept/c.txt'],
      afterReplaced: [2, 1],
      warnings: [],
    })
  })

  it('fs.watch is recursive: a file written two levels down wakes the daemon with a one-hour rescan', async () => {
    expect(await hostNotified(runtime, kind, WAKE_WINDOW_MS)).toEqual({ woken: true, warnings: [] })
  })

  it('relative and ambiguous host paths are refused naming watchPaths; key prefixes and file:/// URLs are accepted', async () => {
    const refused = 'INVALID_QUEUE_OPTIONS:watchPaths'
    expect(await hostPathValidation(runtime, kind)).toEqual({
      absolutePath: refused,
      relativePath: refused,
      parentPath: refused,
      home: refused,
      fileHost: refused,
      fileRelative: refused,
      fileQuery: refused,
      keyPrefix: null,
      fileUrl: null,
    })
  })
})
