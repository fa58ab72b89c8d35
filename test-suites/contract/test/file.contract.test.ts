import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRecordBackend } from '@agent-state/core'
import { afterAll } from 'vitest'
import { describeBackendContract } from '../src/index.js'
import { createFileRecordStore, FILE_STORE_STEPS } from './file-record-store.js'

// A durable, multi-process backend (test-only) so the multi-process and crash tiers run here.
const root = mkdtempSync(join(tmpdir(), 'agent-state-contract-'))
describeBackendContract({
  name: 'file-records (test-only)',
  create: (ctx) =>
    createRecordBackend(createFileRecordStore({ root, namespace: ctx.namespace }), {
      clock: ctx.clock,
    }),
  process: {
    module: fileURLToPath(new URL('./file-backend-child.ts', import.meta.url)),
    options: { root },
    writeSteps: FILE_STORE_STEPS,
  },
  // Fewer kill -9 cycles than the default 50 keep this package's own run under two minutes.
  scale: { crashCycles: 30 },
})

afterAll(() => rmSync(root, { recursive: true, force: true }))
