import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createMemoryRecordMap, createMemoryRecordStore } from '@agent-state/memory'
import { afterAll } from 'vitest'
import { describeRecordStoreContract } from '../src/index.js'
import { createFileRecordStore } from './file-record-store.js'
import { correctStores } from './record-store-mutants.js'

// The memory record store keeps no namespace of its own: one map per namespace keeps them apart.
const maps = new Map<string, ReturnType<typeof createMemoryRecordMap>>()
describeRecordStoreContract({
  name: 'memory-records',
  create: (ctx) => {
    let records = maps.get(ctx.namespace)
    if (records === undefined) {
      records = createMemoryRecordMap()
      maps.set(ctx.namespace, records)
    }
    return createMemoryRecordStore({ records })
  },
})

const root = mkdtempSync(join(tmpdir(), 'agent-state-record-store-'))
describeRecordStoreContract({
  name: 'file-records (test-only)',
  create: (ctx) => createFileRecordStore({ root, namespace: ctx.namespace }),
})

afterAll(() => rmSync(root, { recursive: true, force: true }))

// A declared limit small enough that the size check runs (the stores above declare 64 MiB).
describeRecordStoreContract({ name: 'memory-records (1 MiB limit)', create: correctStores() })
