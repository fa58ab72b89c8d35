import type { JsonValue } from '../shared/canonical-json.js'
import { wakeError } from '../shared/errors.js'

/**
 * Third-party trigger providers (docs/runtime/wakes.md, Resume conditions):
 * a provider registered under a name turns a `trigger: { provider: name,
 * config }` condition into a `schedule` wake at the occurrence it computes.
 * The wake carries everything the resume needs (`provider`, `details`), so
 * only the processes that suspend workers with the trigger need the
 * provider registered; dispatchers do not.
 */

/** A provider's lower-case name, as `conditions.trigger.provider` spells it. */
export const TRIGGER_PROVIDER_NAME = /^[a-z][a-z0-9_-]{0,63}$/

/** The built-in providers' names: a third party cannot replace them. */
export const BUILT_IN_TRIGGER_PROVIDERS = ['cron', 'webhook'] as const

/** A third-party trigger provider. */
export interface TriggerProvider {
  /**
   * The next occurrence after `now` (ms) for `config`, at suspend: its due
   * time (ms since the epoch) and plain-JSON `details` handed to the resumed
   * worker. Throw to refuse the config: the suspend fails with
   * `TRIGGER_REGISTRATION_FAILED` and writes nothing.
   */
  next(config: unknown, now: number): { readonly dueAt: number; readonly details?: JsonValue }
}

const providers = new Map<string, TriggerProvider>()

/**
 * Registers `provider` under `name` in this process (replacing an earlier
 * registration of the same name).
 *
 * @throws `INVALID_WAKE` for a name that is not a lower-case name, a built-in
 *   provider's name, or a provider without `next`.
 */
export function registerTriggerProvider(name: string, provider: TriggerProvider): void {
  if (typeof name !== 'string' || !TRIGGER_PROVIDER_NAME.test(name)) {
    throw wakeError('INVALID_WAKE', 'A trigger provider name is a lower-case name', {
      path: 'provider',
    })
  }
  if ((BUILT_IN_TRIGGER_PROVIDERS as readonly string[]).includes(name)) {
    throw wakeError('INVALID_WAKE', `The ${name} trigger provider is built in`, {
      path: 'provider',
      provider: name,
    })
  }
  if (typeof provider?.next !== 'function') {
    throw wakeError('INVALID_WAKE', 'A trigger provider has a next(config, now) function', {
      path: 'provider.next',
      provider: name,
    })
  }
  providers.set(name, provider)
}

/** The third-party provider registered under `name` in this process, or `undefined`. */
export function registeredTriggerProvider(name: string): TriggerProvider | undefined {
  return providers.get(name)
}
