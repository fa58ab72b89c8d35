import { type Backend, isAgentStateError, openBackend, redactUrl } from '@agent-state/core'
import { backendLoading } from './backend-importer.js'
import { CliError, EXIT } from './exit-codes.js'
import { describeFailure } from './failure.js'

/** Default bound for opening a backend and its first answer, in milliseconds. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000

/** Options of {@link connect}. */
export interface ConnectOptions {
  /** Namespace inside the storage; default `"default"`, as `openBackend`. */
  readonly namespace?: string
  /** Bound for opening the backend and its first answer. */
  readonly timeoutMs?: number
  /**
   * What to ask the backend to prove it answers. Default: a one-key listing,
   * which reads nothing and changes nothing.
   */
  readonly probe?: (backend: Backend) => Promise<void>
}

/** Resolves `work`, or rejects with `onTimeout()` after `ms` milliseconds. */
export function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms)
  })
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer))
}

/**
 * Opens the backend a URL names and checks it answers, within a bounded time.
 * Every failure comes back as one {@link CliError} line naming the URL
 * (redacted): a bad or unknown URL is a usage error (exit 2); an unreachable
 * server, a wrong password, a missing bucket or package, or no answer in time
 * is exit 3. So a command never starts its real work on a backend that cannot
 * serve it, and never hangs on one that does not answer.
 */
export async function connect(url: string, options: ConnectOptions = {}): Promise<Backend> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
  const shown = redactUrl(url)
  let opened: Backend | undefined
  const attempt = (async () => {
    opened = await openBackend(url, {
      ...backendLoading(url),
      ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
    })
    await (options.probe ?? ((b) => b.list({ limit: 1 }).then(() => undefined)))(opened)
    return opened
  })()
  try {
    return await withTimeout(
      attempt,
      timeoutMs,
      () =>
        new CliError(
          `${shown}: no answer within ${timeoutMs} ms (is the server up?)`,
          EXIT.UNAVAILABLE,
        ),
    )
  } catch (error) {
    // A late open must not keep the process alive or leak a client.
    void attempt.then((b) => b.close()).catch(() => undefined)
    if (opened !== undefined) void opened.close().catch(() => undefined)
    if (error instanceof CliError) throw error
    const described = describeFailure(error, [url])
    const code = isAgentStateError(error, 'INVALID_ARGUMENT') ? EXIT.USAGE : described.exitCode
    // Anything but a usage error while opening means the backend cannot serve us.
    const exitCode = code === EXIT.USAGE ? EXIT.USAGE : EXIT.UNAVAILABLE
    const message = described.message.includes(shown)
      ? described.message
      : `${shown}: ${described.message}`
    throw new CliError(message, exitCode, { cause: error })
  }
}
