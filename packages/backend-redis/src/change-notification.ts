import {
  assertWatchPrefix,
  type ChangeHint,
  type ChangeNotificationCapability,
  createWatchSet,
  failedWatch,
  type WatchOptions,
} from '@agent-state/core'
import type { Redis } from 'ioredis'
import type { RedisConnection } from './connection.js'

/**
 * What the Redis backend claims. The put and delete scripts `SPUBLISH` the
 * key inside the write, so a live subscriber has it within a network round
 * trip; 500 ms also covers a reconnect after a dropped subscriber connection
 * (retries every 50 to 250 ms), after which the watch resyncs.
 */
export const REDIS_CHANGE_NOTIFICATION: ChangeNotificationCapability = {
  mode: 'push',
  maxDelayMs: 500,
}

/** Longest wait between two attempts to re-subscribe. */
const MAX_RETRY_MS = 250

/** One instance's watches over its namespace's change channel. */
export interface RedisWatcher {
  watch(prefix: string, options: WatchOptions | undefined): AsyncIterable<ChangeHint>
  /**
   * Drops the subscriber connection as a network failure would (its socket
   * is destroyed; the watch reconnects and resyncs): the `WATCH_INTERRUPT`
   * seam, for the contract suite and `agent-state verify`.
   */
  interrupt(): void
  /** Ends every watch and drops the subscriber connection. */
  close(): void
}

/**
 * The watches of one backend instance. One dedicated subscriber connection
 * per instance, opened with its first watch and closed with its last (an
 * instance that watches nothing holds no extra connection). The connection
 * never reconnects by itself: when it closes (a killed client, a server
 * restart, a failover) a fresh one is opened, on the node that now serves the
 * channel, with growing back-off, and once it is subscribed every watch gets
 * `resync`: what was published in between is lost, and the watchers re-read.
 */
export function createRedisWatcher(
  connection: RedisConnection,
  channel: string,
  assertOpen: () => void,
): RedisWatcher {
  const watches = createWatchSet()
  let subscriber: Redis | undefined
  let subscribed = false
  let retry: NodeJS.Timeout | undefined
  let attempt = 0
  // Bumped whenever the subscription is dropped on purpose: a connect still in flight then
  // finds itself stale and closes what it opened.
  let generation = 0
  /**
   * The generation of the connect in flight, if any. A watch opened while a stale one (dropped
   * with the instance's last watch) is still in flight starts its own: the stale attempt will
   * only close what it opens.
   */
  let inFlight: number | undefined

  function drop(): void {
    generation++
    subscribed = false
    clearTimeout(retry)
    retry = undefined
    const old = subscriber
    subscriber = undefined
    old?.disconnect()
  }

  function schedule(): void {
    if (watches.size === 0 || retry !== undefined) return
    const delay = Math.min(50 * 2 ** attempt, MAX_RETRY_MS)
    attempt++
    retry = setTimeout(() => {
      retry = undefined
      void connect()
    }, delay)
  }

  async function connect(): Promise<void> {
    const mine = ++generation
    let c: Redis
    inFlight = mine
    try {
      c = await connection.subscriber('watch', channel)
    } catch {
      if (mine === generation) schedule()
      return
    } finally {
      if (inFlight === mine) inFlight = undefined
    }
    if (mine !== generation || watches.size === 0) {
      c.disconnect()
      return
    }
    subscriber = c
    // Errors end in 'close', which is handled; ioredis would print unhandled ones.
    c.on('error', () => {})
    c.on('smessage', (_channel: string, message: string) => {
      if (message === '') watches.prefixChanged('')
      else watches.key(message)
    })
    const lostIt = () => {
      if (subscriber !== c) return
      subscriber = undefined
      subscribed = false
      c.disconnect()
      schedule()
    }
    c.on('close', lostIt)
    // A Cluster node that stops serving the channel's slot (a failover, a migration) sends an
    // unsolicited `sunsubscribe`, which ioredis reports as 'moved': subscribe again on the owner.
    c.on('moved', lostIt)
    try {
      await c.connect()
      await c.ssubscribe(channel)
    } catch {
      if (subscriber === c) {
        subscriber = undefined
        c.disconnect()
        schedule()
      }
      return
    }
    if (subscriber !== c) return
    attempt = 0
    subscribed = true
    // New watches get their first hint; watches that outlived a lost connection re-read.
    watches.resync()
  }

  return {
    watch(prefix, options) {
      try {
        assertOpen()
        assertWatchPrefix(prefix)
      } catch (error) {
        return failedWatch(error)
      }
      const stream = watches.open(prefix, {
        signal: options?.signal,
        onEnd() {
          if (watches.size === 0) drop()
        },
      })
      if (stream.ended) return stream
      if (subscribed) stream.resync()
      else if (subscriber === undefined && retry === undefined && inFlight !== generation) {
        void connect()
      }
      return stream
    },
    interrupt() {
      subscriber?.stream?.destroy()
    },
    close() {
      watches.endAll()
      drop()
    },
  }
}
