import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRecordBackend } from '@agent-state/core'
import type { ContractOptions } from '../src/index.js'
import { createFileRecordStore, FILE_STORE_STEPS, type FileStoreMode } from './file-record-store.js'

const childModule = fileURLToPath(new URL('./file-backend-child.ts', import.meta.url))

/** How to build the options; every field has the correct, multi-process store as its default. */
export interface FileRecordOptionsInput {
  /** The store's behaviour: `correct`, or one of its deliberately broken modes. */
  readonly mode?: FileStoreMode
  /** The backend's name in the suite's output. */
  readonly name?: string
  /** Whether the suite gets the child module, so the multi-process and crash tiers run. */
  readonly withProcess?: boolean
  /** Kill -9 cycles of the crash tier; the suite's default when absent. */
  readonly crashCycles?: number
}

/**
 * Contract options for the test-only file record store (durable and
 * multi-process) in a fresh temporary root, which `removeFileRecordRoots`
 * deletes. One definition serves the store's own contract run and every mutant
 * test that needs a correct or broken durable backend.
 */
export function fileRecordOptions(input: FileRecordOptionsInput = {}): ContractOptions {
  const mode = input.mode ?? 'correct'
  const root = mkdtempSync(join(tmpdir(), `agent-state-file-records-${mode}-`))
  roots.push(root)
  return {
    name: input.name ?? `file-records-${mode}`,
    create: (ctx) =>
      createRecordBackend(createFileRecordStore({ root, namespace: ctx.namespace, mode }), {
        clock: ctx.clock,
      }),
    ...(input.withProcess === false
      ? {}
      : {
          process: { module: childModule, options: { root, mode }, writeSteps: FILE_STORE_STEPS },
        }),
    ...(input.crashCycles === undefined ? {} : { scale: { crashCycles: input.crashCycles } }),
  }
}

const roots: string[] = []

/** Deletes every root `fileRecordOptions` made (call it from `afterAll`). */
export function removeFileRecordRoots(): void {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
}
