import type { IncomingMessage } from 'node:http'

/**
 * Reads a request body of at most `limit` bytes, or `null` as soon as it is
 * known to be longer: from `Content-Length` before reading anything, else
 * while it streams in, so an oversized body is never buffered past the limit
 * (docs/runtime/wakes.md, Webhooks). The rest of an oversized body is
 * drained and dropped, so the caller still reads the `413`.
 */
export async function readLimitedBody(
  request: IncomingMessage,
  limit: number,
): Promise<Uint8Array | null> {
  const declared = Number(request.headers['content-length'])
  if (Number.isFinite(declared) && declared > limit) {
    request.resume()
    return null
  }
  // Listeners, not `for await`: leaving an async iterator early destroys the
  // socket, and the caller would see a reset instead of the 413.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > limit) {
        request.off('data', onData)
        request.resume()
        resolve(null)
        return
      }
      chunks.push(chunk)
    }
    request.on('data', onData)
    request.once('end', () => {
      if (size <= limit) resolve(Buffer.concat(chunks))
    })
    request.once('error', reject)
  })
}
