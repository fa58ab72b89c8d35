import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describeBackendContract, describeRecordStoreContract } from '@agent-state/contract'
import { afterAll } from 'vitest'
import { createFsBackend, createFsRecordStore, fsOptionsSchema } from '../src/index.js'
import { WRITE_STEPS } from './child-factory.js'

const root = mkdtempSync(join(tmpdir(), 'agent-state-fs-contract-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

// 16 MiB (the largest the suite tests) so the value-size limit is exercised too.
const maxValueBytes = 16 * 1024 * 1024

describeBackendContract({
  name: 'fs',
  create: ({ namespace, clock }) => createFsBackend({ root, namespace, clock, maxValueBytes }),
  process: {
    module: fileURLToPath(new URL('./child-factory.ts', import.meta.url)),
    options: { root, maxValueBytes },
    // The frozen-writer tier also stops the holder at each of these steps of a write.
    writeSteps: WRITE_STEPS,
  },
  // No watchInterrupt: the tier's resync check uses the instance's WATCH_INTERRUPT seam (a
  // simulated inotify overflow), as `agent-state verify` does.
})

// The primitive itself, so a failure names the RecordStore method at fault.
describeRecordStoreContract({
  name: 'fs records',
  create: ({ namespace }) =>
    createFsRecordStore(root, fsOptionsSchema.parse({ root, namespace, maxValueBytes })),
})
