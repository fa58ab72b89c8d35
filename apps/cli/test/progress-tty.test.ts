import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { ensureDebianPackages } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { BIN, removeTemps, runScript, tempDir } from './cli-process.js'

const socket = `agent-state-cli-${process.pid}`
const tmux = (...args: string[]): string =>
  execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' })

afterAll(() => {
  try {
    tmux('kill-server')
  } catch {
    // No server left.
  }
  removeTemps()
})

/** The visible screen of the pane, one string per row. */
function screen(): string[] {
  return tmux('capture-pane', '-p', '-t', 'copy').split('\n')
}

describe('copy in a real terminal (tmux)', () => {
  it('draws one progress bar on stderr, redrawn in place, and ends with the report', async () => {
    ensureDebianPackages(['/usr/bin/tmux'], ['tmux'])
    const keys = 3000
    const src = `file:${join(tempDir('agent-state-tty-'), 'src')}`
    const dst = `sqlite:${join(tempDir('agent-state-tty-'), 'dst.db')}`
    const seeded = await runScript('./backend-ops.ts', [
      src,
      JSON.stringify([{ many: keys, prefix: 'k/' }]),
    ])
    expect(seeded.status, seeded.stderr).toBe(0)
    const command = `${process.execPath} ${BIN} copy '${src}' '${dst}' --concurrency 4; echo "EXIT=$?"; sleep 600`
    tmux('new-session', '-d', '-s', 'copy', '-x', '150', '-y', '40', command)
    const frames: string[][] = []
    const deadline = Date.now() + 600_000
    let last: string[] = []
    while (Date.now() < deadline) {
      last = screen()
      frames.push(last)
      if (last.some((line) => line.startsWith('EXIT='))) break
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const text = last.join('\n')
    expect(text, text).toContain('EXIT=0')
    const bars = last.filter((line) => /^copy \[[=-]+\] \d+% \| \d+\/\d+ keys/.test(line))
    // Redrawn in place: exactly one bar line on the screen, at 100%.
    expect(bars, text).toHaveLength(1)
    expect(bars[0]).toMatch(new RegExp(`^copy \\[=+\\] 100% \\| ${keys}/${keys} keys`))
    expect(text).toMatch(new RegExp(`^${keys} keys in [\\d.]+ s: created ${keys}, `, 'm'))
    expect(text).toContain(
      `check by size and writer, not bytes (--checksum compares bytes): same ${keys}, differs 0, missing 0, error 0`,
    )
    // Some frame caught it part-way, so the bar really moved (reported, not timed).
    const partial = frames.some((f) =>
      f.some((line) => /^copy \[[=-]*-[=-]*\] \d+% \| \d+\//.test(line)),
    )
    console.log(`progress frames captured: ${frames.length}; a part-way frame seen: ${partial}`)
  }, 900_000)
})
