import { DeleteObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import { classify, toAgentStateError } from './errors.js'
import { withinDeadline } from './request-deadline.js'

/**
 * What the start-up probe learned about the server's conditional writes:
 * either they are enforced (and in which ETag form `If-Match` is accepted),
 * or the server's failing behaviour, in words for the `UNSUPPORTED` error.
 */
export type ProbeResult =
  | { readonly enforced: true; readonly quoteIfMatch: boolean }
  | { readonly enforced: false; readonly problem: string }

/** Strips the double quotes S3 puts around an ETag. */
export function bareEtag(etag: string | undefined): string {
  return (etag ?? '').replace(/^(W\/)?"(.*)"$/, '$2')
}

type Attempt = { readonly ok: true; readonly etag: string } | { readonly ok: false }

/**
 * Checks, on a fresh key in the namespace's reserved area, that the server
 * refuses a second `If-None-Match: *` PutObject and an `If-Match` PutObject
 * with a wrong ETag, and accepts `If-Match` with the current one (bare, as
 * RGW needs it, or else quoted). Costs four or five PutObjects and one
 * DeleteObject, each under a `timeoutMs` deadline (body included). Throws a
 * mapped error when the server cannot be reached or does not answer in time.
 */
export async function probeConditionalWrites(
  client: S3Client,
  bucket: string,
  probeKey: string,
  timeoutMs = 30_000,
): Promise<ProbeResult> {
  const put = async (
    body: string,
    condition: { IfNoneMatch: '*' } | { IfMatch: string },
  ): Promise<Attempt> => {
    try {
      const output = await withinDeadline(timeoutMs, (abortSignal) =>
        client.send(
          new PutObjectCommand({ Bucket: bucket, Key: probeKey, Body: body, ...condition }),
          { abortSignal },
        ),
      )
      return { ok: true, etag: bareEtag(output.ETag) }
    } catch (error) {
      if (classify(error, true) === 'conflict') return { ok: false }
      throw toAgentStateError(error, 'Probing conditional writes')
    }
  }
  try {
    const created = await put('probe 1', { IfNoneMatch: '*' })
    if (!created.ok) {
      return {
        enforced: false,
        problem: 'refuses If-None-Match: * on PutObject of a key that does not exist',
      }
    }
    const again = await put('probe 2', { IfNoneMatch: '*' })
    if (again.ok) {
      return {
        enforced: false,
        problem:
          'ignores If-None-Match: * on PutObject (a second create-only PutObject of the same key succeeded)',
      }
    }
    const wrong = await put('probe 3', { IfMatch: '0123456789abcdef0123456789abcdef' })
    if (wrong.ok) {
      return {
        enforced: false,
        problem: 'ignores If-Match on PutObject (a PutObject with a wrong ETag succeeded)',
      }
    }
    const bare = await put('probe 4', { IfMatch: created.etag })
    if (bare.ok) return { enforced: true, quoteIfMatch: false }
    const quoted = await put('probe 5', { IfMatch: `"${created.etag}"` })
    if (quoted.ok) return { enforced: true, quoteIfMatch: true }
    return {
      enforced: false,
      problem: "refuses If-Match on PutObject with the object's current ETag, quoted or not",
    }
  } finally {
    await withinDeadline(timeoutMs, (abortSignal) =>
      client.send(new DeleteObjectCommand({ Bucket: bucket, Key: probeKey }), { abortSignal }),
    ).catch(() => {})
  }
}
