import type { Suspension } from './suspension.js'

/** Emitted once when a worker parks (never again for an idempotent second suspend). */
export interface WorkerSuspendedEvent {
  readonly type: 'WorkerSuspended'
  readonly workerId: string
  readonly suspension: Suspension
}

/** Emitted once when a worker completes naturally. */
export interface WorkerCompletedEvent {
  readonly type: 'WorkerCompleted'
  readonly workerId: string
  readonly iterationsCompleted: number
  /** RFC 3339. */
  readonly completedAt: string
}

/** A lifecycle event (docs/runtime/workers.md); it carries no transcript text, input or result. */
export type WorkerEvent = WorkerSuspendedEvent | WorkerCompletedEvent

/** Receives worker events. */
export type WorkerEventListener = (event: WorkerEvent) => void

/**
 * Subscribers to worker events. Pass one bus as the `events` option of
 * `startWorker` / `resumeWorker`; every transition that handle persists is
 * emitted once, after the snapshot is written and before the post-hook runs.
 * Events are in-process: another process sees the transition in the
 * snapshot and its audit trail.
 */
export interface WorkerEvents {
  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: WorkerEventListener): () => void
  /** Delivers an event to every listener; a listener's throw becomes a process warning. */
  emit(event: WorkerEvent): void
}

/** Creates an empty {@link WorkerEvents} bus. */
export function createWorkerEvents(): WorkerEvents {
  const listeners = new Set<WorkerEventListener>()
  return {
    subscribe(listener) {
      if (typeof listener !== 'function') throw new TypeError('listener must be a function')
      // A fresh wrapper per subscription, so subscribing the same function twice is two subscriptions.
      const entry: WorkerEventListener = (event) => listener(event)
      listeners.add(entry)
      return () => void listeners.delete(entry)
    },
    emit(event) {
      for (const listener of [...listeners]) {
        try {
          listener(event)
        } catch (error) {
          // A listener cannot undo a persisted transition; it is told, not obeyed.
          process.emitWarning(
            `agent-state: a ${event.type} listener of worker ${event.workerId} failed: ${String(error)}`,
            { code: 'WORKER_EVENT_LISTENER_FAILED' },
          )
        }
      }
    },
  }
}
