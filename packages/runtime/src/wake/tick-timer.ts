import type { Backend, Clock } from '@agent-state/core'
import { type DeadlineTimer, startDeadlineTimer } from './deadline-timer.js'
import { type DueHint, openDueWatch, tickDelayOf } from './due-watch.js'
import { sleepDelayOf } from './idle-sleep.js'

/**
 * When a dispatcher ticks by itself (docs/runtime/wakes.md, Ticks woken by
 * change notification): every `intervalMs` where the backend claims no
 * change notification; where it does, as soon as a hint of the due-time
 * index names a wake that is due (or due before the next tick), and
 * otherwise only when the earliest wake the last tick left pending comes
 * due, at most `idleCeilingMs` later (an idle dispatcher sleeps). Early
 * ticks are coalesced: at most one tick runs and at most one more is
 * wanted, so a burst of hints during a tick costs one more tick, and the
 * hints of the dispatcher's own marker deletes (wakes its ticks met) start
 * none.
 *
 * Where the watch polls (`changeNotification.mode: 'poll'`, SQLite), a
 * backend learns what changed by listing the whole watched prefix again
 * after every commit, the dispatcher's own included: a tick that fires
 * wakes would pay a listing of every pending marker every poll interval, so
 * a burst of N due wakes cost O(N²) listed keys (10,000 timers due in one
 * second fired at about 10 a second). Such a watch is closed when a tick
 * is about to fire (or archive) a wake (`busy`) and stays closed while
 * ticks keep firing, each the next one the backend's hint delay after the
 * last (what a hint would have taken), until a tick fires none; then it is
 * opened again (one listing of what is pending), and once it is
 * established one more tick meets whatever was registered while nobody
 * watched (docs/runtime/wakes.md, Ticks woken by change notification). A
 * tick that only meets wakes it leaves (busy, unhandled) closes nothing.
 */

/** Ids of wakes met by ticks, kept to recognise the hints of their marker deletes. Bounded. */
export const MAX_MET_WAKES = 10_000

/** The timer of a dispatcher's automatic ticks. */
export interface TickTimer {
  /** Whether hints of the due-time index arrive (else ticks come from the interval alone). */
  readonly notified: boolean
  /** Resolves once the watch is established (at once when not notified). */
  readonly ready: Promise<void>
  /**
   * What a tick calls before it fires or archives a wake: a polling watch is
   * closed until a tick fires none (see above). Idempotent; nothing on a push watch.
   */
  busy(): void
  /** What the dispatcher calls after every tick (the timer's or `tick()`): a watch `busy` closed is opened again after a tick that fired none. */
  settled(): void
  /** Stops the timer and the watch. Idempotent. */
  stop(): void
}

/** What {@link startTickTimer} needs. */
export interface TickTimerOptions {
  readonly intervalMs: number
  /** The longest a notified dispatcher sleeps between ticks (see `sleepDelayOf`, idle-sleep.ts). */
  readonly idleCeilingMs: number
  /** Whether to watch the due-time index where the backend claims change notification. */
  readonly tickOnChange: boolean
  readonly clock: Clock
  /** Ids of wakes the dispatcher's ticks met (see {@link MAX_MET_WAKES}). */
  readonly met: ReadonlySet<string>
  /**
   * Runs one tick (the dispatcher's `tick()`, so timer ticks and explicit
   * ones never overlap); resolves the earliest due time the tick left
   * pending (`null`: none).
   */
  tick(): Promise<{ readonly nextDueAt: number | null }>
}

/** Starts the automatic ticks: the first after `intervalMs`, then see {@link TickTimer}. */
export function startTickTimer(backend: Backend, options: TickTimerOptions): TickTimer {
  let timer: DeadlineTimer | undefined
  // The armed tick's deadline on the monotonic clock (`performance.now()`).
  let nextAt = Number.POSITIVE_INFINITY
  let running = false
  let again = false
  let stopped = false
  // A polling watch re-lists the whole index after every commit: closed while a tick fires.
  const closesWhenBusy = backend.capabilities.changeNotification?.mode === 'poll'
  const hintDelayMs = backend.capabilities.changeNotification?.maxDelayMs ?? options.intervalMs
  // Set by `busy`: the watch is closed until a tick fires no wake.
  let closed = false
  // Whether the tick in progress fired (called `busy`).
  let busyTick = false

  // Arms the timer `delayMs` from now unless it is already armed sooner.
  const arm = (delayMs: number): void => {
    if (stopped) return
    const at = performance.now() + delayMs
    if (timer !== undefined && at >= nextAt) return
    timer?.clear()
    nextAt = at
    // Never early (deadline-timer.ts): a tick before a hinted wake is due would sleep past it.
    timer = startDeadlineTimer(at, fire)
  }
  const onHint = (hint: DueHint): void => {
    // The horizon is the armed tick: a hint of a wake due before it arms the timer sooner.
    const horizonMs = timer === undefined ? Number.POSITIVE_INFINITY : nextAt - performance.now()
    const delay = tickDelayOf(hint, options.met, options.clock(), horizonMs)
    if (delay !== null) arm(delay)
  }
  /** The current watch, its controller, and whether it is established. */
  const open = () => {
    const controller = new AbortController()
    const watch = options.tickOnChange
      ? openDueWatch(backend, controller.signal, onHint)
      : { notified: false, established: Promise.resolve() }
    const current = { watch, controller, established: false }
    void watch.established.then(() => {
      current.established = true
    })
    return current
  }
  let current = open()
  const ready = current.watch.established
  const reopen = (): void => {
    current = open()
    const reopened = current
    // Nothing was hinted while the watch was closed: one tick once it is
    // established meets what was registered meanwhile, and may sleep after.
    void reopened.watch.established.then(() => {
      if (current === reopened && reopened.watch.notified) arm(0)
    })
  }
  const fire = (): void => {
    timer = undefined
    nextAt = Number.POSITIVE_INFINITY
    if (running) {
      // Coalesced: one more tick after the running one, however many hints came.
      again = true
      return
    }
    running = true
    // Sleeping is safe only when every marker written after this tick's
    // listing is hinted: the watch was established before the tick started.
    const watched = !closed && current.established && current.watch.notified
    void options
      .tick()
      .catch(() => null)
      .then((report) => {
        running = false
        if (stopped) return
        if (again) {
          again = false
          arm(0)
          return
        }
        arm(
          report !== null && watched && !closed && current.watch.notified
            ? sleepDelayOf(
                report.nextDueAt,
                options.clock(),
                options.intervalMs,
                options.idleCeilingMs,
              )
            : options.intervalMs,
        )
      })
  }
  arm(options.intervalMs)
  return {
    get notified() {
      return current.watch.notified
    },
    ready,
    busy() {
      busyTick = true
      if (!closesWhenBusy || closed || stopped || !current.watch.notified) return
      closed = true
      current.controller.abort()
    },
    settled() {
      const met = busyTick
      busyTick = false
      if (!closed || stopped) return
      if (met) {
        // A burst goes on while ticks keep firing: the watch stays closed, and
        // the next tick comes as soon as a hint would have brought it.
        arm(Math.min(options.intervalMs, hintDelayMs))
        return
      }
      closed = false
      reopen()
      // Should the new watch never be established, the interval still ticks.
      arm(options.intervalMs)
    },
    stop() {
      stopped = true
      current.controller.abort()
      timer?.clear()
      timer = undefined
    },
  }
}
