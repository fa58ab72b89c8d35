import {
  type Redis,
  type SentinelAddress,
  type SentinelConnectionOptions,
  SentinelConnector,
} from 'ioredis'

/**
 * The method of ioredis' SentinelConnector (private in its types) that
 * creates a client to one Sentinel. The failover detector's clients (one per
 * Sentinel, subscribed to `+switch-master`) get no 'error' listener from
 * ioredis, so an unreachable Sentinel makes it print "[ioredis] Unhandled
 * error event" on every reconnect, out of the backend's reach.
 */
interface SentinelClientFactory {
  connectToSentinel(endpoint: Partial<SentinelAddress>, options?: unknown): Redis
}

/**
 * A SentinelConnector whose clients to the Sentinels report their errors to
 * `onError` (with the Sentinel's address) instead of printing them. If a
 * later ioredis renames the method, the connector behaves as ioredis' own.
 */
export function quietSentinelConnector(
  onError: (error: unknown, sentinel: string) => void,
): new (
  options: unknown,
) => SentinelConnector {
  return class QuietSentinelConnector extends SentinelConnector {
    constructor(options: unknown) {
      super(options as SentinelConnectionOptions)
      const self = this as unknown as SentinelClientFactory
      const create = self.connectToSentinel
      if (typeof create !== 'function') return
      self.connectToSentinel = (endpoint, clientOptions) => {
        const client = create.call(this, endpoint, clientOptions)
        const address = `${endpoint.host ?? '127.0.0.1'}:${endpoint.port ?? 26379}`
        client.on('error', (error: unknown) => onError(error, address))
        return client
      }
    }
  }
}
