/**
 * Measures the fs backend's hot path. Run from the package directory:
 * `node --conditions=@agent-state/source --import tsx benchmarks/put-get.ts`
 * Prints microseconds per operation; nothing is asserted.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createFsBackend } from '../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'agent-state-fs-bench-'))
const rounds = Number(process.env.ROUNDS ?? 500)
const value = new Uint8Array(1024).fill(7)

async function measure(label: string, run: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < 20; i++) await run(i) // warm-up
  const started = performance.now()
  for (let i = 0; i < rounds; i++) await run(i)
  const micros = ((performance.now() - started) / rounds) * 1000
  console.log(`${label.padEnd(34)} ${micros.toFixed(0).padStart(6)} µs/op`)
}

try {
  for (const fsync of [true, false]) {
    const backend = createFsBackend({ root, namespace: `fsync-${fsync}`, fsync })
    await measure(`put 1 KiB (fsync ${fsync})`, (i) => backend.put(`k${i % 50}`, value))
    await measure(`put ifMatch 1 KiB (fsync ${fsync})`, async () => {
      const meta = await backend.head('cas')
      await backend.put(
        'cas',
        value,
        meta === null ? { ifNoneMatch: '*' } : { ifMatch: meta.version },
      )
    })
    await measure(`get 1 KiB (fsync ${fsync})`, (i) => backend.get(`k${i % 50}`))
    await measure(`list 50 keys (fsync ${fsync})`, () => backend.list())
    await backend.close()
  }
} finally {
  rmSync(root, { recursive: true, force: true })
}
