/**
 * The error a request fails with when it has no complete answer (status,
 * headers and whole body) within `requestTimeoutMs`. Its `code` is
 * `ETIMEDOUT`, so `classify` treats it as ambiguous: a write may have landed.
 */
export class RequestDeadlineError extends Error {
  /** Node-style code, read by `classify` and kept in the mapped error's context. */
  readonly code = 'ETIMEDOUT'
  constructor(readonly timeoutMs: number) {
    super(`no complete answer within requestTimeoutMs (${timeoutMs} ms)`)
    this.name = 'TimeoutError'
  }
}

/**
 * Runs one S3 request, body included, under a hard deadline: after
 * `timeoutMs` the signal aborts (the SDK destroys the request and its
 * socket; `run` destroys a body it streams itself) and the returned promise
 * rejects with {@link RequestDeadlineError} whatever `run` still waits for.
 * The SDK's own `requestTimeout` stops at the response headers, so a server
 * that sends headers and then stalls the body would otherwise hang forever.
 */
export async function withinDeadline<T>(
  timeoutMs: number,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController()
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new RequestDeadlineError(timeoutMs)
      controller.abort(error)
      reject(error)
    }, timeoutMs)
  })
  try {
    return await Promise.race([run(controller.signal), expired])
  } catch (error) {
    // The SDK's own AbortError may settle first; the deadline is the real cause.
    if (controller.signal.aborted) throw controller.signal.reason
    throw error
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Reads the whole body of a streamed response under `signal`: when the
 * deadline passes, the stream is destroyed so its socket does not linger.
 */
export async function readBody(
  body: { transformToByteArray(): Promise<Uint8Array> } | undefined,
  signal: AbortSignal,
): Promise<Uint8Array> {
  if (body === undefined) return new Uint8Array(0)
  const destroy = () => (body as { destroy?: (error?: Error) => void }).destroy?.()
  if (signal.aborted) destroy()
  signal.addEventListener('abort', destroy, { once: true })
  try {
    return await body.transformToByteArray()
  } finally {
    signal.removeEventListener('abort', destroy)
  }
}
