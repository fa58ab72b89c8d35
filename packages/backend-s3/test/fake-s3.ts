import { createHash } from 'node:crypto'
import { createServer, type Server } from 'node:http'

/**
 * A tiny S3 look-alike for ONE test: the probe's refusal of servers that do
 * not enforce preconditions. It stores objects in a Map and answers
 * PutObject, GetObject, HeadObject and DeleteObject; it honours only the
 * preconditions it is told to (`enforce`), like servers that ignore them.
 */
export interface FakeS3 {
  readonly endpoint: string
  readonly objects: Map<string, Buffer>
  stop(): Promise<void>
}

/** Starts the fake on 127.0.0.1 (a kernel-chosen port). */
export async function startFakeS3(enforce: { ifNoneMatch: boolean; ifMatch: boolean }) {
  const objects = new Map<string, Buffer>()
  const etagOf = (body: Buffer): string => `"${createHash('md5').update(body).digest('hex')}"`
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const path = decodeURIComponent((request.url ?? '/').split('?')[0] ?? '/')
      const current = objects.get(path)
      const fail = (status: number, code: string): void => {
        response.writeHead(status, { 'content-type': 'application/xml' })
        response.end(
          `<?xml version="1.0"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`,
        )
      }
      if (request.method === 'PUT') {
        const ifNoneMatch = request.headers['if-none-match']
        const ifMatch = request.headers['if-match']
        if (enforce.ifNoneMatch && ifNoneMatch === '*' && current !== undefined) {
          return fail(412, 'PreconditionFailed')
        }
        if (enforce.ifMatch && ifMatch !== undefined) {
          const bare = (value: string): string => value.replace(/^"|"$/g, '')
          if (current === undefined || bare(etagOf(current)) !== bare(String(ifMatch))) {
            return fail(412, 'PreconditionFailed')
          }
        }
        const body = Buffer.concat(chunks)
        objects.set(path, body)
        response.writeHead(200, { etag: etagOf(body) })
        return response.end()
      }
      if (request.method === 'DELETE') {
        objects.delete(path)
        response.writeHead(204)
        return response.end()
      }
      if (current === undefined) return fail(404, 'NoSuchKey')
      response.writeHead(200, { etag: etagOf(current), 'content-length': current.byteLength })
      response.end(request.method === 'HEAD' ? undefined : current)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return {
    endpoint: `http://127.0.0.1:${port}`,
    objects,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  } satisfies FakeS3
}
