import { redactUrl } from '@agent-state/core'
import { describe, it } from 'vitest'
import { runThenCleanUp } from './check-run.js'
import { RECORD_STORE_CHECKS, type RecordStoreCheck } from './record-store-checks.js'
import {
  createRecordStoreHarness,
  type RecordStoreContractOptions,
} from './record-store-harness.js'

/**
 * Runs one record-store check on a fresh namespace, then destroys every
 * namespace it used (when the store has `destroy`) and closes every store.
 * Rejects with the check's `AssertionError` (its message names the
 * `RecordStore` method at fault) when the store breaks the primitive's rules.
 */
export async function runRecordStoreCheck(
  check: RecordStoreCheck,
  options: RecordStoreContractOptions,
): Promise<void> {
  const harness = createRecordStoreHarness(options)
  const failure = await runThenCleanUp(
    () => check.run(harness),
    () => harness.cleanup(),
  )
  if (failure !== undefined) throw failure
}

/**
 * Declares the record-store tier as vitest tests: the `RecordStore`
 * primitive tested directly (conditions, version uniqueness, scan order,
 * exclusive `after`, both prefix bounds, `limit`/`done`, namespaces kept
 * apart, the record size limit, the error code of a refused write). Run it
 * beside `describeBackendContract` on `createRecordBackend(store)`: this tier
 * names the method at fault, the Backend suite proves the whole contract.
 *
 * @example
 * ```ts
 * import { describeRecordStoreContract } from '@agent-state/contract'
 * describeRecordStoreContract({ name: 'my-store', create: (ctx) => createMyStore({ namespace: ctx.namespace }) })
 * ```
 */
export function describeRecordStoreContract(options: RecordStoreContractOptions): void {
  const name = redactUrl(options.name)
  describe(`RecordStore contract: ${name}`, async () => {
    let probe: Awaited<ReturnType<RecordStoreContractOptions['create']>>
    try {
      probe = await options.create({ namespace: 'probe' })
      await probe.close()
    } catch (error) {
      it('create a store', () => {
        throw error
      })
      return
    }
    for (const check of RECORD_STORE_CHECKS) {
      const reason = check.skip?.(probe.capabilities, probe)
      const title = reason === undefined ? check.title : `${check.title} (skipped: ${reason})`
      it.skipIf(reason !== undefined)(
        title,
        () => runRecordStoreCheck(check, options),
        check.timeoutMs,
      )
    }
  })
}
