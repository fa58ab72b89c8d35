import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
})
