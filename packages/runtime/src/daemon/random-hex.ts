import { randomBytes } from 'node:crypto'

/**
 * Random hex for the queue's per-operation ids (event ids, default delivery
 * holders), drawn from a pool refilled by one `randomBytes` call: a call per
 * id cost more CPU than the rest of a trigger's runtime code (bench:queue-cost).
 */
const POOL_BYTES = 4096
let pool = ''
let offset = 0

/** `bytes` random bytes as lowercase hex (what `randomBytes(bytes).toString('hex')` gives). */
export function randomHex(bytes: number): string {
  const chars = bytes * 2
  if (offset + chars > pool.length) {
    pool = randomBytes(Math.max(POOL_BYTES, bytes)).toString('hex')
    offset = 0
  }
  const hex = pool.slice(offset, offset + chars)
  offset += chars
  return hex
}
