import { join } from 'node:path'
import { createFsBackend } from '@agent-state/fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { printable } from '../src/output.js'
import { removeTemps, runCli, tempDir } from './cli-process.js'

afterAll(removeTemps)

/** What a terminal must never receive raw: C0 (but the newline) and C1 controls, separators, bidi formatting, BOM. */
function isRawUnsafe(code: number): boolean {
  return (
    (code < 0x20 && code !== 0x0a) ||
    (code >= 0x7f && code <= 0x9f) ||
    code === 0x061c ||
    code === 0x200e ||
    code === 0x200f ||
    (code >= 0x2028 && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069) ||
    code === 0xfeff
  )
}

function expectDisplaySafe(output: string): void {
  let found: string | null = null
  for (let i = 0; i < output.length && found === null; i++) {
    if (isRawUnsafe(output.charCodeAt(i))) found = `U+${output.charCodeAt(i).toString(16)} at ${i}`
  }
  expect(found).toBe(null)
}

/** The CLI's escaping before bidi characters were added: C0 and C1 controls only. */
function controlsOnlyPrintable(text: string): string {
  let out = ''
  for (const c of text) {
    const code = c.codePointAt(0) ?? 0
    out +=
      code < 0x20 || (code >= 0x7f && code <= 0x9f) ? `\\u${code.toString(16).padStart(4, '0')}` : c
  }
  return out
}

const HOSTILE_KEY = 'hostile/invoice-\u202egnp.exe'
const C1_KEY = 'hostile/c1-\u009b31m-red'
const HOSTILE_WRITER = 'ops\u2066\u2028admin'

describe('keys and writers printed by ls and stat', () => {
  let url: string
  beforeAll(async () => {
    const dir = join(tempDir('agent-state-escaping-'), 'state')
    url = `file:${dir}`
    const backend = createFsBackend({ root: dir })
    const bytes = new TextEncoder().encode('x')
    await backend.put(HOSTILE_KEY, bytes, { writer: { writerId: HOSTILE_WRITER } })
    await backend.put(C1_KEY, bytes, { writer: { writerId: 'plain' } })
    await backend.close()
  })

  it('escape bidi overrides, separators and C1 controls in keys and writers', async () => {
    const listed = await runCli(['ls', '-r', '-l', 'hostile/', '--url', url])
    expect(listed.status, listed.stderr).toBe(0)
    expectDisplaySafe(listed.stdout)
    expect(listed.stdout).toContain('hostile/invoice-\\u202egnp.exe')
    expect(listed.stdout).toContain('hostile/c1-\\u009b31m-red')
    expect(listed.stdout).toContain('ops\\u2066\\u2028admin')
    const stat = await runCli(['stat', HOSTILE_KEY, '--url', url])
    expect(stat.status, stat.stderr).toBe(0)
    expectDisplaySafe(stat.stdout)
    expect(stat.stdout).toContain('\\u202e')
  })

  it('the check catches the controls-only escaping (the mutant) and passes printable', () => {
    const line = `${HOSTILE_KEY}  ${HOSTILE_WRITER}`
    expect(() => expectDisplaySafe(controlsOnlyPrintable(line))).toThrow(/U\+202e/)
    expectDisplaySafe(printable(line))
  })
})
