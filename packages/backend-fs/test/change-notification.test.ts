import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Backend, ChangeHint } from '@agent-state/core'
import { afterAll, describe, expect, it } from 'vitest'
import { createFsBackend } from '../src/index.js'

const root = mkdtempSync(join(tmpdir(), 'agent-state-fs-watch-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
const bytes = (text: string) => new TextEncoder().encode(text)

function record(b: Backend, prefix: string) {
  const controller = new AbortController()
  const hints: ChangeHint[] = []
  const done = (async () => {
    for await (const hint of b.watch?.(prefix, { signal: controller.signal }) ?? [])
      hints.push(hint)
  })()
  return {
    hints,
    async until(predicate: () => boolean): Promise<boolean> {
      const deadline = Date.now() + 5000
      while (!predicate()) {
        if (Date.now() > deadline) return false
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      return true
    },
    async stop() {
      controller.abort()
      await done
    },
  }
}

describe('fs change notification', () => {
  it('hints a key over 120 bytes (hashed file name) as a prefix of each watch', async () => {
    const a = createFsBackend({ root, namespace: 'long' })
    const b = createFsBackend({ root, namespace: 'long' })
    const w = record(a, 'x/')
    try {
      expect(await w.until(() => w.hints.length === 1)).toBe(true)
      await b.put(`x/${'k'.repeat(200)}`, bytes('v'))
      expect(await w.until(() => w.hints.some((h) => h.kind === 'prefix'))).toBe(true)
      expect(w.hints.filter((h) => h.kind === 'prefix')).toEqual([{ kind: 'prefix', prefix: 'x/' }])
    } finally {
      await w.stop()
      await a.close()
      await b.close()
    }
  })

  it('keeps watching across destroy: a resync, then hints from the recreated directory', async () => {
    const a = createFsBackend({ root, namespace: 'gone' })
    const b = createFsBackend({ root, namespace: 'gone' })
    const w = record(a, '')
    try {
      expect(await w.until(() => w.hints.length === 1)).toBe(true)
      await b.put('before', bytes('v'))
      expect(await w.until(() => w.hints.some((h) => h.kind === 'key' && h.key === 'before'))).toBe(
        true,
      )
      const seen = w.hints.length
      await b.destroy?.()
      expect(await w.until(() => w.hints.slice(seen).some((h) => h.kind === 'resync'))).toBe(true)
      await b.put('after', bytes('v'))
      expect(await w.until(() => w.hints.some((h) => h.kind === 'key' && h.key === 'after'))).toBe(
        true,
      )
    } finally {
      await w.stop()
      await a.close()
      await b.close()
    }
  })
})
