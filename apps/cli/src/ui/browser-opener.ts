import { spawn } from 'node:child_process'

/**
 * The program `agent-state ui --open` hands its address to: `$BROWSER` when set (the
 * convention of many command-line tools), else the platform's opener (`open` on macOS,
 * `xdg-open` elsewhere; `explorer.exe` on Windows, which opens a URL without a shell).
 */
export function browserOpener(env: NodeJS.ProcessEnv = process.env): string {
  const chosen = env.BROWSER?.trim()
  if (chosen !== undefined && chosen !== '') return chosen
  if (process.platform === 'darwin') return 'open'
  if (process.platform === 'win32') return 'explorer.exe'
  return 'xdg-open'
}

/**
 * Opens `url` in a browser with {@link browserOpener}: the URL is one argument of the program,
 * never a shell line, and the program is left running on its own. Resolves to `null` once it
 * started, or to why it could not start (the caller prints it; the address is printed anyway).
 */
export function openInBrowser(
  url: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | null> {
  const program = browserOpener(env)
  return new Promise((resolve) => {
    const child = spawn(program, [url], { detached: true, stdio: 'ignore', env })
    child.once('error', (error) => resolve(`${program}: ${error.message}`))
    child.once('spawn', () => {
      child.unref()
      resolve(null)
    })
  })
}
