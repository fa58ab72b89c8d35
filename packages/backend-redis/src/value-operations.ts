import {
  assertValidKey,
  checkDelete,
  checkPut,
  collectListPage,
  type DeleteOptions,
  type ListEntry,
  type ListOptions,
  type ListPage,
  normalizeListOptions,
  type PutOptions,
  randomSuffix,
  type StoredValue,
  type ValueMeta,
} from '@agent-state/core'
import { indexBounds, RECORD_FIELD } from './key-layout.js'
import { DELETE, FENCED_PUT, HEAD, PUT, SCAN } from './lua-scripts.js'
import type { OperationContext } from './operation-context.js'
import {
  corrupt,
  fenceLostOf,
  GET_FIELDS,
  leaseIdOf,
  named,
  parseWriter,
  REPLY,
  reply,
  sizeOfVersion,
  storedValueOf,
  throwWriteFailure,
  toNumber,
} from './script-replies.js'

/** The value half of the Backend contract. */
export interface ValueOperations {
  get(key: string): Promise<StoredValue | null>
  head(key: string): Promise<ValueMeta | null>
  put(key: string, value: Uint8Array, options?: PutOptions): Promise<ValueMeta>
  delete(key: string, options?: DeleteOptions): Promise<boolean>
  list(options?: ListOptions): Promise<ListPage>
}

/** Fields `head` reads, in this order, with one `HMGET`. */
const HEAD_FIELDS = [RECORD_FIELD.version, RECORD_FIELD.writer, RECORD_FIELD.updatedAt] as const

/** The value operations of one backend instance. */
export function valueOperations(ctx: OperationContext): ValueOperations {
  const { connection, layout, capabilities } = ctx
  return {
    async get(key) {
      ctx.assertOpen()
      assertValidKey(key, capabilities.maxKeyBytes)
      return storedValueOf(key, await connection.hmgetBuffer('get', layout.record(key), GET_FIELDS))
    },

    async head(key) {
      ctx.assertOpen()
      assertValidKey(key, capabilities.maxKeyBytes)
      // One plain HMGET when the version carries the size (written by 0.2+).
      const [v, writer, updatedAt] = await connection.hmgetBuffer(
        'head',
        layout.record(key),
        HEAD_FIELDS,
      )
      if (v === null || v === undefined) return null
      const version = v.toString()
      const size = sizeOfVersion(version)
      if (size !== undefined) {
        return {
          key,
          version,
          size,
          writer: parseWriter(key, writer),
          updatedAt: toNumber(key, updatedAt?.toString(), 't'),
        }
      }
      // A 0.1 version: measure the value in the same atomic step as the rest.
      const r = await ctx.read(HEAD, 'head', key, [layout.record(key)], [])
      if (r[0] === 'NONE') return null
      const f = named(key, r, REPLY.head)
      return {
        key,
        version: f.version,
        size: toNumber(key, f.size, 'size'),
        writer: parseWriter(key, f.writer),
        updatedAt: toNumber(key, f.updatedAt, 't'),
      }
    },

    async put(key, value, putOptions) {
      ctx.assertOpen()
      const writer = checkPut(key, value, putOptions, capabilities)
      const keys = [layout.record(key), layout.index, layout.records]
      const args = [
        key,
        Buffer.from(value.buffer, value.byteOffset, value.byteLength),
        writer === null ? '' : JSON.stringify(writer),
        putOptions?.ifMatch ?? '',
        putOptions?.ifNoneMatch === '*' ? '1' : '',
        putOptions?.lease === undefined ? '' : String(putOptions.lease.token),
        randomSuffix(),
        leaseIdOf(putOptions?.lease),
        layout.changes,
      ]
      const fence = putOptions?.fence
      // A fenced put is its own script (FENCED_PUT), so a plain put runs the one it always ran.
      if (fence !== undefined) {
        keys.push(layout.record(fence.key))
        args.push(String(fence.token), leaseIdOf(fence))
      }
      const r = reply(
        await ctx.mutate(fence === undefined ? PUT : FENCED_PUT, 'put', key, keys, args),
        key,
      )
      if (r[0] !== 'OK') {
        if (r[0] === 'FENCE_LOST' && fence !== undefined) throw fenceLostOf(key, fence, r)
        throwWriteFailure(key, r, putOptions?.lease)
      }
      const f = named(key, r, REPLY.put)
      return {
        key,
        version: f.version,
        size: value.byteLength,
        writer,
        updatedAt: toNumber(key, f.updatedAt, 't'),
      }
    },

    async delete(key, deleteOptions) {
      ctx.assertOpen()
      checkDelete(key, deleteOptions, capabilities.maxKeyBytes)
      const r = reply(
        await ctx.mutate(
          DELETE,
          'delete',
          key,
          [layout.record(key), layout.index],
          [
            key,
            deleteOptions?.ifMatch ?? '',
            deleteOptions?.lease === undefined ? '' : String(deleteOptions.lease.token),
            leaseIdOf(deleteOptions?.lease),
            layout.changes,
          ],
        ),
        key,
      )
      if (r[0] !== 'OK') throwWriteFailure(key, r, deleteOptions?.lease)
      return named(key, r, REPLY.delete).existed === '1'
    },

    async list(listOptions) {
      ctx.assertOpen()
      const normalized = normalizeListOptions(listOptions)
      return collectListPage(normalized, async (position, max) => {
        const [min, upper] = indexBounds(normalized.prefix, position)
        const r = await ctx.read(
          SCAN,
          'list',
          '',
          [layout.index],
          [min, upper, String(max), layout.recordPrefix],
        )
        const width = REPLY.listEntry.length
        if (r.length % width !== 0) throw corrupt('', 'listing reply of a partial entry')
        const entries: ListEntry[] = []
        for (let at = 0; at < r.length; at += width) {
          const f = named('', r, REPLY.listEntry, at)
          if (f.version === '') throw corrupt(f.key, 'listed in the index without a value')
          entries.push({
            key: f.key,
            version: f.version,
            size: toNumber(f.key, f.size, 'size'),
            updatedAt: toNumber(f.key, f.updatedAt, 't'),
          })
        }
        return { entries, done: entries.length < max }
      })
    },
  }
}
