import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Backend, type Clock, isAgentStateError } from '@agent-state/core'
import { z } from 'zod'
import type { JsonValue } from '../shared/canonical-json.js'
import { MAX_EVENT_PAYLOAD_BYTES } from './event-topics.js'
import { readLimitedBody } from './webhook-body.js'
import { recordWebhookCall } from './webhook-calls.js'
import { readWebhookTrigger, webhookSecretMatches } from './webhook-trigger.js'

/**
 * A dispatcher's webhook endpoint (docs/runtime/wakes.md, Webhooks): an HTTP
 * server, on 127.0.0.1 and a free port unless told otherwise, that takes
 * `POST /wakes/webhook/<trigger id>` with `Authorization: Bearer <secret>`
 * and a JSON body, and makes it a `webhook` wake of the trigger's worker
 * before answering `202`. Triggers are read from the backend, so every
 * dispatcher's endpoint accepts a call for every trigger.
 */

/** The path a trigger's calls are posted to: this prefix and the trigger id. */
export const WEBHOOK_PATH_PREFIX = '/wakes/webhook/'

/** The endpoint options (the dispatcher's `webhook`); the single source of their types. */
export const webhookEndpointOptionsSchema = z.strictObject({
  /** The address to listen on. Default `127.0.0.1`: reachable from this host only until you say otherwise. */
  host: z.string().min(1).max(255).default('127.0.0.1'),
  /** The port; 0 (the default) takes a free one, read back from `webhookEndpoint`. */
  port: z.int().min(0).max(65_535).default(0),
  /** The largest body accepted, in bytes; longer is `413`. Default and maximum 64 KiB (an event's limit). */
  maxBodyBytes: z.int().min(1).max(MAX_EVENT_PAYLOAD_BYTES).default(MAX_EVENT_PAYLOAD_BYTES),
})
/** See {@link webhookEndpointOptionsSchema}. */
export type WebhookEndpointOptions = z.input<typeof webhookEndpointOptionsSchema>

/** The error codes of a webhook answer's `{ error: { code, message } }`. */
export const WEBHOOK_ANSWER_CODES = [
  'WEBHOOK_NOT_FOUND',
  'WEBHOOK_METHOD_NOT_ALLOWED',
  'WEBHOOK_UNAUTHORIZED',
  'WEBHOOK_FORBIDDEN',
  'WEBHOOK_UNSUPPORTED_MEDIA_TYPE',
  'WEBHOOK_BODY_TOO_LARGE',
  'WEBHOOK_INVALID_JSON',
  'WEBHOOK_GONE',
  'WEBHOOK_UNAVAILABLE',
  'WEBHOOK_FAILED',
] as const
/** See {@link WEBHOOK_ANSWER_CODES}. */
export type WebhookAnswerCode = (typeof WEBHOOK_ANSWER_CODES)[number]

/** A running endpoint. */
export interface WebhookEndpoint {
  /** Resolves once listening (rejects if the address cannot be bound). */
  readonly ready: Promise<void>
  /** `http://<host>:<port>` once listening, else `null`. */
  readonly url: string | null
  /** Stops accepting calls and waits for the server to close. Idempotent. */
  close(): Promise<void>
}

/** The URL a trigger's calls are posted to: `<endpoint>/wakes/webhook/<trigger id>`. */
export function webhookTriggerUrl(endpoint: string, triggerId: string): string {
  return `${endpoint.replace(/\/+$/, '')}${WEBHOOK_PATH_PREFIX}${encodeURIComponent(triggerId)}`
}

const TRIGGER_ID = /^resume-[0-9a-f]{32}$/
const decoder = new TextDecoder('utf-8', { fatal: true })

interface Answer {
  readonly status: number
  readonly body: Record<string, JsonValue>
  readonly headers?: Record<string, string>
}

function failure(
  status: number,
  code: WebhookAnswerCode,
  message: string,
  headers?: Record<string, string>,
): Answer {
  return { status, body: { error: { code, message } }, ...(headers ? { headers } : {}) }
}

/**
 * Starts the endpoint over `backend`. Calls are checked in this order, and
 * none but the last writes anything: the path (`404`), the method (`405`),
 * the trigger (`404`), the secret (`401` missing, `403` wrong, compared in
 * constant time), the content type (`415`, `application/json` only), the
 * body's size (`413`) and JSON (`400`), the suspension still waiting (`410`),
 * then the durable record and `202 { wakeId }`. Error answers carry a code
 * and a message, never the secret or the body.
 */
export function startWebhookEndpoint(
  backend: Backend,
  options: z.output<typeof webhookEndpointOptionsSchema>,
  clock: Clock,
): WebhookEndpoint {
  const answer = async (request: IncomingMessage): Promise<Answer> => {
    const path = (request.url ?? '').split('?')[0] ?? ''
    if (!path.startsWith(WEBHOOK_PATH_PREFIX)) {
      return failure(404, 'WEBHOOK_NOT_FOUND', 'No webhook is served at this path')
    }
    if (request.method !== 'POST') {
      return failure(405, 'WEBHOOK_METHOD_NOT_ALLOWED', 'A webhook takes POST only', {
        allow: 'POST',
      })
    }
    // Not decoded: a trigger id is letters, digits and `-`, so an escaped one is no trigger (and a bad escape no 503).
    const triggerId = path.slice(WEBHOOK_PATH_PREFIX.length)
    const trigger = TRIGGER_ID.test(triggerId) ? await readWebhookTrigger(backend, triggerId) : null
    if (trigger === null) return failure(404, 'WEBHOOK_NOT_FOUND', 'No webhook trigger has this id')
    const authorization = request.headers.authorization ?? ''
    const bearer = /^Bearer (.+)$/.exec(authorization)?.[1]
    if (bearer === undefined) {
      return failure(401, 'WEBHOOK_UNAUTHORIZED', 'Send the secret as Authorization: Bearer', {
        'www-authenticate': 'Bearer',
      })
    }
    if (!webhookSecretMatches(bearer, trigger.secretSha256)) {
      return failure(403, 'WEBHOOK_FORBIDDEN', 'The secret does not match this trigger')
    }
    const mediaType = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase()
    if (mediaType !== 'application/json') {
      return failure(415, 'WEBHOOK_UNSUPPORTED_MEDIA_TYPE', 'The body must be application/json')
    }
    const bytes = await readLimitedBody(request, options.maxBodyBytes)
    if (bytes === null) {
      return failure(
        413,
        'WEBHOOK_BODY_TOO_LARGE',
        `The body exceeds ${options.maxBodyBytes} bytes`,
        { connection: 'close' },
      )
    }
    let body: JsonValue
    try {
      body = JSON.parse(decoder.decode(bytes)) as JsonValue
    } catch {
      // Not the parser's message: V8 quotes the input in it.
      return failure(400, 'WEBHOOK_INVALID_JSON', 'The body is not valid UTF-8 JSON')
    }
    const recorded = await recordWebhookCall(backend, trigger, body, clock)
    if (recorded === 'gone') {
      return failure(410, 'WEBHOOK_GONE', 'The suspension this trigger woke has ended')
    }
    return { status: 202, body: { wakeId: recorded.wakeId } }
  }

  const send = (response: ServerResponse, result: Answer): void => {
    const text = JSON.stringify(result.body)
    response.writeHead(result.status, {
      'content-type': 'application/json; charset=utf-8',
      'cache-control': 'no-store',
      ...result.headers,
    })
    response.end(text)
  }

  const server = createServer((request, response) => {
    answer(request).then(
      (result) => send(response, result),
      (error: unknown) => {
        // The error's code only: its message and context may name keys, and nothing here needs more.
        if (isAgentStateError(error, 'EVENT_PAYLOAD_TOO_LARGE')) {
          send(
            response,
            failure(
              413,
              'WEBHOOK_BODY_TOO_LARGE',
              'The body as stored JSON exceeds the event limit',
            ),
          )
        } else if (isAgentStateError(error) && !error.retryable) {
          send(response, failure(500, 'WEBHOOK_FAILED', `Recording the call failed: ${error.code}`))
        } else {
          const code = isAgentStateError(error) ? error.code : 'an error'
          send(
            response,
            failure(503, 'WEBHOOK_UNAVAILABLE', `The backend failed (${code}); try again`, {
              'retry-after': '1',
            }),
          )
        }
      },
    )
  })
  let url: string | null = null
  const ready = new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => {
      server.off('error', reject)
      const address = server.address() as AddressInfo
      const host = address.address.includes(':') ? `[${address.address}]` : address.address
      url = `http://${host}:${address.port}`
      resolve()
    })
  })
  let closed: Promise<void> | null = null
  return {
    ready,
    get url() {
      return url
    },
    close() {
      closed ??= ready.then(
        () =>
          new Promise<void>((resolve) => {
            server.close(() => resolve())
            server.closeAllConnections()
          }),
        () => undefined,
      )
      return closed
    },
  }
}
