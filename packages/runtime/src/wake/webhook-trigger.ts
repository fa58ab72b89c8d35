import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Backend, Clock } from '@agent-state/core'
import { z } from 'zod'
import { wakeError } from '../shared/errors.js'
import { isValidId } from '../shared/ids.js'
import { webhookTriggerKey } from '../shared/layout.js'
import { readStoredJson } from './stored-json.js'

/**
 * The `webhook` trigger provider (docs/runtime/wakes.md, Webhooks): a resume
 * condition `{ provider: 'webhook', config: { secretSha256 } }` wakes the
 * worker when a dispatcher's webhook endpoint receives a POST carrying the
 * secret. The runtime never stores or shows the secret: the suspending code
 * makes it with {@link createWebhookTrigger}, keeps it (or hands it to the
 * caller of the webhook), and only its SHA-256 goes into the conditions and
 * the stored trigger. A SHA-256 of 256 random bits cannot be reversed, so
 * the hash may be shown (inspect shows the worker's conditions) where the
 * secret may not.
 */

const encoder = new TextEncoder()
const WRITER = { writerId: 'agent-state/webhooks' }

/** A webhook trigger's configuration: the hex SHA-256 of its secret, never the secret. */
export const webhookTriggerConfigSchema = z.strictObject({
  /** `sha256(secret)` as 64 lower-case hex digits ({@link createWebhookTrigger} computes it). */
  secretSha256: z.string().regex(/^[0-9a-f]{64}$/, 'the SHA-256 of the secret, 64 hex digits'),
})
/** See {@link webhookTriggerConfigSchema}. */
export type WebhookTriggerConfig = z.infer<typeof webhookTriggerConfigSchema>

/** The stored trigger, at `wakes/webhooks/<trigger id>`: whom a call wakes and how it is checked. */
export const webhookTriggerRecordSchema = z.strictObject({
  format: z.literal('agent-state/webhook-trigger'),
  schemaVersion: z.literal(1),
  /** The suspension's trigger id (its `autoResumeTrigger`), the last segment of the URL. */
  triggerId: z.string().regex(/^resume-[0-9a-f]{32}$/),
  workerId: z.string().refine(isValidId),
  secretSha256: webhookTriggerConfigSchema.shape.secretSha256,
  registeredAt: z.int().nonnegative(),
})
/** See {@link webhookTriggerRecordSchema}. */
export type WebhookTriggerRecord = z.infer<typeof webhookTriggerRecordSchema>

/** A new webhook trigger: the resume condition to suspend with and the secret a caller must send. */
export interface NewWebhookTrigger {
  /** `{ provider: 'webhook', config: { secretSha256 } }`, for `conditions.trigger`. */
  readonly trigger: { readonly provider: 'webhook'; readonly config: WebhookTriggerConfig }
  /**
   * 256 random bits, base64url: sent as `Authorization: Bearer <secret>`.
   * Stored nowhere by the runtime: keep it where the webhook's caller can get it.
   */
  readonly secret: string
}

/** The hex SHA-256 of a webhook secret, as stored. */
export function hashWebhookSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex')
}

/**
 * A fresh webhook trigger: a secret of 256 random bits and the condition
 * naming its hash. Suspend with `conditions: { trigger }`; the call's URL is
 * `webhookTriggerUrl(endpoint, suspension.autoResumeTrigger)`.
 */
export function createWebhookTrigger(): NewWebhookTrigger {
  const secret = randomBytes(32).toString('base64url')
  return {
    trigger: { provider: 'webhook', config: { secretSha256: hashWebhookSecret(secret) } },
    secret,
  }
}

/**
 * Whether `given` is the secret whose hash is `secretSha256`, in constant
 * time: both sides are 32-byte digests (equal length whatever was sent), and
 * `timingSafeEqual` compares them without an early exit.
 */
export function webhookSecretMatches(given: string, secretSha256: string): boolean {
  const expected = Buffer.from(secretSha256, 'hex')
  const actual = createHash('sha256').update(given, 'utf8').digest()
  return expected.length === actual.length && timingSafeEqual(expected, actual)
}

/**
 * Validates a webhook trigger's config at suspend, before anything is
 * written. A `secret` in the config is refused (it would be stored in the
 * worker's conditions, which inspect shows).
 *
 * @throws `INVALID_WAKE` (`context.path` `trigger.config...`); the suspend reports it as `TRIGGER_REGISTRATION_FAILED`.
 */
export function parseWebhookTriggerConfig(config: unknown): WebhookTriggerConfig {
  const parsed = webhookTriggerConfigSchema.safeParse(config ?? {})
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const path = ['trigger.config', ...(issue?.path ?? [])].join('.')
    // The issue message names keys, never values, so a secret passed by mistake is not echoed.
    throw wakeError(
      'INVALID_WAKE',
      `Invalid webhook trigger: ${issue?.message ?? 'bad config'}; pass { secretSha256 } from createWebhookTrigger(), never the secret`,
      { path },
    )
  }
  return parsed.data
}

/** Stores a suspension's webhook trigger (create-only: a trigger id is fresh per suspension). */
export async function registerWebhookTrigger(
  backend: Backend,
  options: { workerId: string; triggerId: string; config: WebhookTriggerConfig; clock: Clock },
): Promise<void> {
  const record: WebhookTriggerRecord = {
    format: 'agent-state/webhook-trigger',
    schemaVersion: 1,
    triggerId: options.triggerId,
    workerId: options.workerId,
    secretSha256: options.config.secretSha256,
    registeredAt: options.clock(),
  }
  await backend.put(webhookTriggerKey(options.triggerId), encoder.encode(JSON.stringify(record)), {
    ifNoneMatch: '*',
    writer: WRITER,
  })
}

/** The stored webhook trigger, or `null`. @throws `EVENT_CORRUPT` (not JSON, failing its schema, another id). */
export async function readWebhookTrigger(
  backend: Backend,
  triggerId: string,
): Promise<WebhookTriggerRecord | null> {
  return readStoredJson(
    backend,
    webhookTriggerKey(triggerId),
    webhookTriggerRecordSchema,
    'Webhook trigger',
    (value) => value.triggerId === triggerId,
  )
}
