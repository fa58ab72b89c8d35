import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRecordBackend } from '@agent-state/core'
import { afterAll, describe, expect, it } from 'vitest'
import { CONTRACT_CHECKS, type ContractOptions, runContractCheck } from '../src/index.js'
import { createFileRecordStore, type FileStoreMode } from './file-record-store.js'

const childModule = fileURLToPath(new URL('./file-backend-child.ts', import.meta.url))

const roots: string[] = []
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true })
})

function fileOptions(mode: FileStoreMode, crashCycles: number): ContractOptions {
  const root = mkdtempSync(join(tmpdir(), `agent-state-mutant-${mode}-`))
  roots.push(root)
  return {
    name: `file-records-${mode}`,
    create: (ctx) =>
      createRecordBackend(createFileRecordStore({ root, namespace: ctx.namespace, mode }), {
        clock: ctx.clock,
      }),
    process: { module: childModule, options: { root, mode } },
    scale: { crashCycles },
  }
}

function checkById(id: string) {
  const found = CONTRACT_CHECKS.find((c) => c.id === id)
  if (found === undefined) throw new Error(`no check ${id}`)
  return found
}

describe('the multi-process and crash tiers fail on broken file stores', () => {
  it('catches a check-then-write compare-and-set across processes', async () => {
    const check = checkById(
      'multi-process/n-by-m-compare-and-set-increments-across-processes-lose-no-update',
    )
    await expect(runContractCheck(check, fileOptions('racy', 1))).rejects.toThrow(
      /counter after N×M increments/,
    )
  }, 120_000)

  it('catches a store that acknowledges writes before they are durable', async () => {
    const check = checkById('crash/acknowledged-writes-survive-kill-9-and-nothing-is-torn')
    await expect(runContractCheck(check, fileOptions('lazy', 6))).rejects.toThrow(
      /acknowledged write was lost/,
    )
  }, 120_000)
})
