/**
 * A redis-server under valgrind's callgrind, for benchmarks that report the server's instructions per
 * operation: a cost the host's load does not move at all (`queue-redis-cost.ts`).
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from '@agent-state/test-services'
import { Redis } from 'ioredis'

/** A running callgrind server: `zero()` resets its counters, `instructions()` reads them. */
export interface CallgrindRedis {
  readonly host: string
  readonly port: number
  /** Resets the instruction counters. */
  zero(): void
  /**
   * Instructions since the last zero, serverCron's taken out (its share depends on the phase's
   * length), the inclusive instructions of a server function, and `callgrind_annotate`'s
   * inclusive listing.
   */
  instructions(): { total: number; inclusive: (fn: string) => number; annotated: string }
  stop(): Promise<void>
}

/** Starts redis-server under callgrind, with appendonly like the test servers. */
export async function startRedisUnderCallgrind(): Promise<CallgrindRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'redis-callgrind-'))
  const port = await freePort()
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${dir}/cg.out`,
      'redis-server',
      ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes'],
      ...['--dir', dir],
    ],
    { stdio: 'ignore' },
  )
  // valgrind starts slowly: one fresh connection attempt every 200 ms until the server answers.
  for (let tries = 0; ; tries++) {
    const probe = new Redis({
      host: '127.0.0.1',
      port,
      lazyConnect: true,
      retryStrategy: () => null,
    })
    probe.on('error', () => {})
    try {
      await probe.connect()
      probe.disconnect()
      break
    } catch (error) {
      probe.disconnect()
      if (tries > 150) {
        child.kill('SIGTERM')
        throw error
      }
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
  }
  const control = (flag: string) =>
    execFileSync('callgrind_control', [flag, String(child.pid)], { stdio: 'ignore' })
  return {
    host: '127.0.0.1',
    port,
    zero: () => control('-z'),
    instructions() {
      for (const f of readdirSync(dir)) if (f.startsWith('cg.out.')) rmSync(join(dir, f))
      control('-d')
      const file = join(dir, readdirSync(dir).find((f) => f.startsWith('cg.out.')) ?? 'missing')
      const total = Number(/^(?:summary|totals): (\d+)/m.exec(readFileSync(file, 'utf8'))?.[1])
      const annotated = execFileSync(
        'callgrind_annotate',
        ['--inclusive=yes', '--threshold=100', file],
        { encoding: 'utf8', maxBuffer: 1 << 26 },
      )
      const inclusive = (fn: string): number => {
        const m = new RegExp(`^\\s*([\\d,]+) \\([^)]*\\)\\s+\\S*:${fn} `, 'm').exec(annotated)?.[1]
        return m === undefined ? 0 : Number(m.replaceAll(',', ''))
      }
      return { total: total - inclusive('serverCron'), inclusive, annotated }
    },
    stop: async () => {
      child.kill('SIGTERM')
      await new Promise((resolve) => child.once('exit', resolve))
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
