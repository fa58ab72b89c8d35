import type { EffectHandler } from '@agent-state/runtime'

/**
 * Files a ticket at the provider at `provider` (its base URL). Not retry-safe: the provider does not
 * deduplicate, so an effect it reports absent must not be sent again blindly.
 * `hold` asks the provider to keep the answer back (the demo kills this
 * process while it waits).
 */
export function providerTicketHandler(
  provider: string,
  hold: boolean,
  onCall: () => void = () => undefined,
): EffectHandler {
  return {
    retrySafe: false,
    timeoutMs: 30_000,
    async dispatch({ idempotencyKey, request, signal }) {
      onCall()
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'idempotency-key': idempotencyKey,
      }
      if (hold) headers['x-hold'] = '1'
      const response = await fetch(`${provider}/apply`, {
        method: 'POST',
        headers,
        body: JSON.stringify(request),
        signal,
      })
      if (!response.ok) throw new Error(`the provider answered ${response.status}`)
      return ((await response.json()) as { result: { ticket: string } }).result
    },
    async reconcile({ idempotencyKey }) {
      const response = await fetch(`${provider}/status/${encodeURIComponent(idempotencyKey)}`)
      const body = (await response.json()) as { status: string; result?: { ticket: string } }
      return body.status === 'confirmed'
        ? { status: 'confirmed', result: body.result ?? null }
        : { status: 'absent' }
    },
  }
}
