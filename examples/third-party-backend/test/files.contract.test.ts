import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describeBackendContract, describeRecordStoreContract } from '@agent-state/contract'
import { afterAll } from 'vitest'
import { createFilesBackend, createFilesRecordStore } from '../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'agent-state-files-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

// The primitive itself: each failure names the RecordStore method at fault.
describeRecordStoreContract({
  name: 'files',
  create: (ctx) => createFilesRecordStore({ root, namespace: ctx.namespace }),
})

// The whole Backend contract, on core's createRecordBackend over the store.
describeBackendContract({
  name: 'files',
  create: (ctx) => createFilesBackend({ root, namespace: ctx.namespace, clock: ctx.clock }),
  // The store claims `durable`: a child process writes, is killed with SIGKILL, and the write
  // must read back (children start through tsx, so the module may be TypeScript).
  process: {
    module: fileURLToPath(new URL('./files-backend-child.ts', import.meta.url)),
    options: { root },
  },
})
