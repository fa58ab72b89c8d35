import { type ChildProcess, spawn } from 'node:child_process'
import { cliCommand } from './cli-process.js'

/** A running `agent-state ui` process, as users start it. */
export interface UiProcess {
  /** The printed address with its token (`http://127.0.0.1:port/?token=…`). */
  readonly url: string
  readonly origin: string
  readonly port: number
  readonly token: string
  /** Everything the process printed so far. */
  output(): { stdout: string; stderr: string }
  /** Stops it with SIGTERM and resolves its exit status. */
  stop(): Promise<number | null>
}

/**
 * Starts `agent-state ui …` (the real command, through the bin, see {@link cliCommand}) and
 * resolves once it printed its address; rejects with its output when it exits first or prints
 * nothing within `timeoutMs`.
 */
export function startUi(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  timeoutMs = 60_000,
): Promise<UiProcess> {
  const { bin, env: merged } = cliCommand(env)
  const child: ChildProcess = spawn(process.execPath, [bin, 'ui', ...args], {
    env: merged,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  const stop = async (): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    return exited
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop()
      reject(new Error(`agent-state ui printed no address in ${timeoutMs} ms:\n${stdout}${stderr}`))
    }, timeoutMs)
    const check = (): void => {
      const match = /open (http:\/\/([^/\s]+)\/\?token=([A-Za-z0-9_-]+))/.exec(stdout)
      if (match === null) return
      clearTimeout(timer)
      const [, url, hostPort, token] = match as unknown as [string, string, string, string]
      resolve({
        url,
        origin: `http://${hostPort}`,
        port: Number(hostPort.slice(hostPort.lastIndexOf(':') + 1)),
        token,
        output: () => ({ stdout, stderr }),
        stop,
      })
    }
    child.stdout?.on('data', check)
    void exited.then((status) => {
      clearTimeout(timer)
      reject(new Error(`agent-state ui exited (${status}) before serving:\n${stdout}${stderr}`))
    })
  })
}
