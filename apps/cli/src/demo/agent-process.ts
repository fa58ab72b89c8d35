import { type ChildProcess, spawn } from 'node:child_process'
import { extname } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

/** The demo's effect: its stable id in the run (with the run id, it makes the idempotency key). */
export const DEMO_EFFECT_ID = 'ticket-1'

/** One JSON event an agent process printed. */
export interface AgentEvent {
  readonly pid: number
  readonly event: string
  readonly [field: string]: unknown
}

/** A running demo agent process and the events it has printed so far. */
export interface AgentProcess {
  readonly pid: number
  readonly child: ChildProcess
  /** Resolves the first event matching `predicate`, or rejects when the process ends or `timeoutMs` passes. */
  waitFor(predicate: (event: AgentEvent) => boolean, timeoutMs: number): Promise<AgentEvent>
  /** Resolves how the process ended. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Everything it wrote on stderr (for a failing step's explanation). */
  stderr(): string
}

/**
 * Starts `demo-agent` in a fresh process: the compiled `.js` when this
 * package is built, otherwise the TypeScript source through tsx with the
 * `@agent-state/source` condition.
 */
export function startAgent(args: readonly string[]): AgentProcess {
  return startDemoProcess('demo-agent', args)
}

/**
 * Starts one of the demo's scripts (`demo-agent`, `demo-provider`) in a fresh
 * process, the same way as {@link startAgent}.
 */
export function startDemoProcess(name: string, args: readonly string[]): AgentProcess {
  const here = fileURLToPath(import.meta.url)
  const script = fileURLToPath(new URL(`./${name}${extname(here)}`, import.meta.url))
  const fromSource = extname(here) === '.ts'
  const node = fromSource
    ? ['--conditions=@agent-state/source', '--import', import.meta.resolve('tsx'), script]
    : [script]
  const child = spawn(process.execPath, [...node, ...args], { stdio: ['pipe', 'pipe', 'pipe'] })
  const events: AgentEvent[] = []
  const waiters = new Set<() => void>()
  let ended = false
  let errText = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    errText += chunk
  })
  createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
    try {
      events.push(JSON.parse(line) as AgentEvent)
    } catch {
      return
    }
    for (const wake of waiters) wake()
  })
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      ended = true
      for (const wake of waiters) wake()
      resolve({ code, signal })
    })
  })
  return {
    pid: child.pid as number,
    child,
    exited,
    stderr: () => errText,
    waitFor(predicate, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const found = events.find(predicate)
          if (found !== undefined) {
            done()
            resolve(found)
            return true
          }
          if (ended) {
            done()
            const failed = events.find((event) => event.event === 'failed')
            const why =
              failed !== undefined
                ? `: ${String(failed.code)}: ${String(failed.message)}`
                : errText === ''
                  ? ''
                  : `: ${errText.trim().split('\n').at(-1)}`
            reject(new Error(`the agent process ${child.pid} ended first${why}`))
            return true
          }
          return false
        }
        const timer = setTimeout(() => {
          done()
          reject(new Error(`no such event from agent process ${child.pid} within ${timeoutMs} ms`))
        }, timeoutMs)
        const done = (): void => {
          clearTimeout(timer)
          waiters.delete(wake)
        }
        const wake = (): void => {
          check()
        }
        if (!check()) waiters.add(wake)
      })
    },
  }
}
