/**
 * Applies a list of operations to the backend a URL names, as a separate
 * process (tests seed state the way another program would):
 *   node --conditions=@agent-state/source --import tsx test/backend-ops.ts <url> '<json ops>'
 * ops: {"put": key, "value": text, "writer"?: id} | {"lease": key, "holder": h}
 *      | {"many": count, "prefix": p} (count keys `<p><i>`, values of varied size, two writers)
 * Prints one JSON line: the head of every key it put (for "many": the count).
 */
import { openBackend, type WriterIdentity } from '@agent-state/core'
import { importBackendPackage } from '../src/backend-importer.js'

type Op =
  | { put: string; value: string; writer?: string }
  | { lease: string; holder: string }
  | { many: number; prefix: string }

const [url, opsText, namespace] = process.argv.slice(2)
if (url === undefined || opsText === undefined)
  throw new Error('usage: backend-ops.ts <url> <ops> [namespace]')
const backend = await openBackend(url, {
  importer: importBackendPackage,
  ...(namespace === undefined ? {} : { namespace }),
})
const encoder = new TextEncoder()
const results: unknown[] = []
for (const op of JSON.parse(opsText) as Op[]) {
  if ('put' in op) {
    const writer: WriterIdentity | undefined =
      op.writer === undefined ? undefined : { writerId: op.writer }
    results.push(
      await backend.put(op.put, encoder.encode(op.value), writer === undefined ? {} : { writer }),
    )
  } else if ('lease' in op) {
    results.push(await backend.acquireLease(op.lease, { holder: op.holder, ttlMs: 600_000 }))
  } else {
    let next = 0
    const work = async (): Promise<void> => {
      while (next < op.many) {
        const i = next++
        const value = encoder.encode(`value ${i} `.padEnd(64 + (i % 97), '.'))
        await backend.put(`${op.prefix}${String(i).padStart(6, '0')}`, value, {
          writer:
            i % 2 === 0
              ? { writerId: 'planner', stageId: 'plan' }
              : { writerId: 'worker-7', workerId: 'w7' },
        })
      }
    }
    await Promise.all(Array.from({ length: 32 }, work))
    results.push(op.many)
  }
}
await backend.close()
console.log(JSON.stringify(results))
