import { type ChildProcess, fork } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { isAbsolute } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { childBundle } from './child-bundle.js'
import type { ChildCommand, ChildMessage } from './child-protocol.js'
import type { ContractProcessOptions } from './types.js'

/** A child process running `child-runner` with one backend instance. */
export interface ContractChild {
  readonly pid: number
  /** Runs a scenario step; rejects with the child's error (its `code` kept on the error). */
  request<T = unknown>(command: ChildCommand): Promise<T>
  /** Streamed messages (crash-writer intents and acks). */
  onMessage(listener: (message: ChildMessage) => void): void
  /** Sends a signal (SIGSTOP, SIGCONT, SIGKILL). */
  signal(signal: NodeJS.Signals): void
  /** Resolves when the process has exited. */
  readonly exited: Promise<void>
  /** Disconnects and waits for exit, killing it after a grace period. */
  stop(): Promise<void>
}

function runnerPath(): string {
  const ts = fileURLToPath(new URL('./child-runner.ts', import.meta.url))
  return existsSync(ts) ? ts : fileURLToPath(new URL('./child-runner.js', import.meta.url))
}

/** The `tsx` ESM loader as a file URL, resolved from this package (a peer of the suite). */
function tsxLoader(): string {
  const require = createRequire(import.meta.url)
  try {
    return pathToFileURL(require.resolve('tsx')).href
  } catch {
    throw new Error(
      'The multi-process and crash tiers run children with `--import tsx`; install tsx next to @agent-state/contract',
    )
  }
}

/** Spawns a child, loads the backend in it, and resolves once it is ready. */
export async function spawnContractChild(
  spec: ContractProcessOptions,
  namespace: string,
  stepped = false,
): Promise<ContractChild> {
  const runner = runnerPath()
  // From the sources (this workspace) the runner and the child module are prebuilt once per
  // test process (child-bundle.ts); a published install keeps tsx for the user's module.
  const prebuilt =
    runner.endsWith('.ts') && isAbsolute(spec.module)
      ? await childBundle(runner, spec.module)
      : undefined
  const child: ChildProcess = fork(prebuilt?.runner ?? runner, [], {
    execArgv:
      prebuilt === undefined
        ? ['--conditions=@agent-state/source', '--import', tsxLoader()]
        : ['--enable-source-maps'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'json',
  })
  const pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>()
  const listeners: Array<(message: ChildMessage) => void> = []
  let nextId = 1
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  void exited.then(() => {
    for (const p of pending.values()) p.reject(new Error(`child ${child.pid} exited`))
    pending.clear()
  })
  const ready = new Promise<void>((resolve, reject) => {
    child.once('error', reject)
    void exited.then(() => reject(new Error('child exited before it was ready')))
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'ready') resolve()
      else if (message.type === 'reply') {
        const waiter = pending.get(message.id)
        pending.delete(message.id)
        if (waiter === undefined) return
        if (message.ok) waiter.resolve(message.result)
        else
          waiter.reject(
            Object.assign(new Error(`child ${child.pid}: ${message.error}`), {
              code: message.code,
            }),
          )
      } else for (const listener of listeners) listener(message)
    })
  })
  child.send({
    type: 'init',
    module: prebuilt?.module ?? spec.module,
    options: spec.options ?? null,
    namespace,
    ...(stepped ? { stepped } : {}),
  })
  const timeout = setTimeout(() => child.kill('SIGKILL'), 60_000)
  try {
    await ready
  } finally {
    clearTimeout(timeout)
  }
  return {
    pid: child.pid as number,
    request<T>(command: ChildCommand): Promise<T> {
      const id = nextId++
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (value: unknown) => void, reject })
        child.send({ type: 'request', id, command })
      })
    },
    onMessage(listener) {
      listeners.push(listener)
    },
    signal(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
    },
    exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGCONT')
      if (child.connected) child.disconnect()
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await exited
      clearTimeout(timer)
    },
  }
}
