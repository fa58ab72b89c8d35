import type { ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshName, type MultiProcessBackend, type UrlTarget } from '@agent-state/backend-targets'
import { type Backend, isAgentStateError } from '@agent-state/core'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { type Daemon, type Delivery, openDaemonQueue, resumeDaemon } from '../src/index.js'
import { TRANSIENT_EXIT } from './fixtures/transient.js'
import {
  claimEventually,
  exited,
  prepareChildren,
  sleep,
  spawnChild,
  waitForLine,
} from './queue-helpers.js'
import { createOnPath, type OnPath } from './queue-paths.js'

/**
 * Triggers per producer (4 producers): the 250 on every backend
 * (about 70 s each on fs and S3 on two shared cores). On a slower box lower
 * it with `DAEMON_QUEUE_CRASH_TRIGGERS` (all backends) or
 * `DAEMON_QUEUE_CRASH_S3_TRIGGERS` (S3 only, where every request is a
 * round trip to RGW). The native path's run (a second run of a backend the
 * generic run already covers with 250) takes 100 by default,
 * `DAEMON_QUEUE_CRASH_NATIVE_TRIGGERS`: the kills per run stay 8, so it
 * exercises as many crash points in less time.
 */
function triggersPerProducer(backend: string, path: 'generic' | 'native'): number {
  const all = process.env.DAEMON_QUEUE_CRASH_TRIGGERS
  if (all !== undefined) return Number(all)
  if (backend === 's3') return Number(process.env.DAEMON_QUEUE_CRASH_S3_TRIGGERS ?? 250)
  if (path === 'native') return Number(process.env.DAEMON_QUEUE_CRASH_NATIVE_TRIGGERS ?? 100)
  return 250
}
const PRODUCERS = 4
/** kill -9 rounds per run, split between producers and the consumer. */
const KILLS = 8
const VISIBILITY_MS = 1000
const PRODUCER = 'test/fixtures/queue-producer-child.ts'
const CONSUMER = 'test/fixtures/queue-consumer-child.ts'
const DAEMON = 'test/fixtures/daemon-crash-child.ts'

interface Running {
  child: ChildProcess
  exit: Promise<number | string>
  /** Log length when spawned: a victim is only killed once it logged something since. */
  logLength: number
}

function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []
}

/**
 * The kill -9, SIGSTOP and mid-turn crash tests of the daemon queue on `backends`. Two test
 * files call it (daemon-queue-crash.test.ts, daemon-queue-crash-s3.test.ts): S3's run is the
 * slowest of the package (every request a round trip to RGW), and in a file of its own it runs
 * beside the other backends' instead of after them.
 */
export function describeQueueCrash(backends: readonly OnPath<MultiProcessBackend>[]): void {
  describe.each(backends)(
    'daemon queue across processes on $name',
    ({ name, target: make, path }) => {
      const createDaemonQueue = createOnPath(path)
      // A namespace of this run's own: the generic and native files run side by side on one
      // server, with the same daemon ids.
      const namespace = freshName('queues')
      /** What every child needs: the backend's environment and this run's namespace. */
      const childEnv = () => ({ ...target.env, QUEUE_TEST_NAMESPACE: namespace })
      /** The daemon children create their queue on the same path. */
      const daemonEnv = () => ({ ...childEnv(), DAEMON_QUEUE_PATH: path })
      let dir: string
      let target: UrlTarget
      beforeAll(async () => {
        dir = mkdtempSync(join(tmpdir(), 'agent-state-runtime-queue-'))
        target = make(dir)
        // Bundled once per test process: each start is then plain node, not tsx compiling again.
        await prepareChildren(PRODUCER, CONSUMER, DAEMON)
      })
      afterAll(() => {
        rmSync(dir, { recursive: true, force: true })
      })

      it('4 producers and a consumer under random kill -9: at-least-once, in order, nothing invented', async () => {
        const started = Date.now()
        const perProducer = triggersPerProducer(name, path)
        const backend = await target.open(namespace)
        const daemonId = 'crash'
        const queue = await createDaemonQueue(backend, daemonId, { capacity: 1024 })
        const producerLog = (p: number) => join(dir, `producer-${name}-${p}.log`)
        const consumerLog = join(dir, `consumer-${name}.log`)
        writeFileSync(consumerLog, '')
        const producers = new Map<number, Running>()
        const finished = new Set<number>()
        let consumer: Running | null = null
        let incarnations = 0
        const stderr: string[] = []
        /** Children this test killed: their exit is expected. */
        const killed = new WeakSet<ChildProcess>()
        /** Children restarted after a transient failure (exit 75, see fixtures/transient.ts). */
        const restarts = { producer: 0, consumer: 0 }
        /** The first unexpected exit of a child; every wait below gives up on it. */
        let failure: Error | null = null
        let done = false
        const check = () => {
          if (failure !== null) throw failure
        }
        const spawned = new Set<ChildProcess>()
        // Also when the test fails early: no child outlives it.
        onTestFinished(() => {
          for (const child of spawned) child.kill('SIGKILL')
        })
        const watch = (child: ChildProcess) => {
          spawned.add(child)
          let own = ''
          child.stderr?.on('data', (chunk: Buffer) => {
            own += chunk.toString()
            stderr.push(chunk.toString())
          })
          return () => own.slice(-4000)
        }

        const startProducer = (p: number) => {
          const tried = lines(producerLog(p)).filter((line) => line.startsWith('try '))
          const from = tried.length === 0 ? 0 : Number(tried.at(-1)?.split(' ')[2]) + 1
          if (from >= perProducer) {
            finished.add(p)
            return
          }
          const child = spawnChild(
            PRODUCER,
            [target.url, daemonId, String(p), String(from), String(perProducer), producerLog(p)],
            childEnv(),
          )
          const errors = watch(child)
          producers.set(p, { child, exit: exited(child), logLength: lines(producerLog(p)).length })
          child.once('exit', (code, signal) => {
            if (producers.get(p)?.child === child) producers.delete(p)
            if (killed.has(child)) return
            if (code === 0) finished.add(p)
            else if (code === TRANSIENT_EXIT) {
              restarts.producer++
              startProducer(p)
            } else failure ??= new Error(`producer ${p} exited (${code ?? signal}): ${errors()}`)
          })
        }
        // A consumer that ends by itself before the test is done is restarted when it stopped on
        // a transient failure the contract says to retry (a busy SQLite database, an expired
        // delivery): the queue must still deliver everything. Any other exit fails the test.
        const startConsumer = () => {
          const child = spawnChild(
            CONSUMER,
            [target.url, daemonId, `c${++incarnations}`, String(VISIBILITY_MS), consumerLog],
            childEnv(),
          )
          const errors = watch(child)
          consumer = { child, exit: exited(child), logLength: lines(consumerLog).length }
          child.once('exit', (code, signal) => {
            if (killed.has(child) || done) return
            if (code === TRANSIENT_EXIT) {
              restarts.consumer++
              startConsumer()
            } else failure ??= new Error(`consumer exited (${code ?? signal}): ${errors()}`)
          })
        }
        const kill = async (victim: Running) => {
          killed.add(victim.child)
          victim.child.kill('SIGKILL')
          await victim.exit
        }

        for (let p = 0; p < PRODUCERS; p++) startProducer(p)
        startConsumer()

        let kills = { producer: 0, consumer: 0 }
        const gone = (victim: Running) =>
          victim.child.exitCode !== null || victim.child.signalCode !== null
        /**
         * Waits until the victim has logged `lines` lines since it started (10 s at most), so the
         * kill lands mid-work, then a random time below `pauseMs`.
         */
        const waitForProgress = async (
          file: string,
          victim: Running,
          minLines: number,
          pauseMs: number,
        ) => {
          const deadline = Date.now() + 10_000
          while (lines(file).length < victim.logLength + minLines && !gone(victim)) {
            check()
            if (Date.now() > deadline) return
            await sleep(5)
          }
          await sleep(Math.random() * pauseMs)
        }
        for (let round = 0; round < KILLS; round++) {
          check()
          const killConsumer = round % 2 === 1
          if (killConsumer && consumer !== null) {
            const victim: Running = consumer
            await waitForProgress(consumerLog, victim, 1, 300)
            // It ended by itself meanwhile (and was restarted): no kill to count this round.
            if (gone(victim)) continue
            await kill(victim)
            kills = { ...kills, consumer: kills.consumer + 1 }
            startConsumer()
          } else {
            const alive = [...producers.entries()]
            const picked = alive[Math.floor(Math.random() * alive.length)]
            if (picked === undefined) continue
            const [p, victim] = picked
            // A random count of log lines (2 per trigger), not a random time: on the native
            // paths a producer's 100 triggers can end within the 300 ms the consumer's kill waits,
            // which left runs without a producer kill. 2 to 20 lines is mid-work at any speed.
            await waitForProgress(producerLog(p), victim, 2 + Math.floor(Math.random() * 19), 0)
            if (gone(victim)) continue
            producers.delete(p)
            await kill(victim)
            kills = { ...kills, producer: kills.producer + 1 }
            startProducer(p)
          }
        }
        // Let every producer finish, restarting none unless it stopped on a transient failure.
        while (finished.size < PRODUCERS) {
          check()
          await sleep(50)
        }
        // The consumer drains the queue, then goes.
        const drainDeadline = Date.now() + 240_000
        while ((await queue.counts()).queuedCount > 0) {
          check()
          if (Date.now() > drainDeadline) throw new Error(`queue not drained: ${stderr.join('')}`)
          await sleep(200)
        }
        done = true
        check()
        const lastConsumer = consumer as Running | null
        if (lastConsumer !== null) await kill(lastConsumer)

        // What the producers know.
        const tried = new Set<string>()
        const acknowledged = new Map<string, number>()
        for (let p = 0; p < PRODUCERS; p++) {
          for (const line of lines(producerLog(p))) {
            const [kind, pp, i, seq] = line.split(' ')
            if (kind === 'try') tried.add(`${pp}/${i}`)
            if (kind === 'ok') acknowledged.set(`${pp}/${i}`, Number(seq))
          }
        }
        // What the consumers saw, in order.
        const log = lines(consumerLog)
        const got = log
          .filter((line) => line.startsWith('got '))
          .map((line) => {
            const [, inc, seq, attempt, p, i] = line.split(' ')
            return { inc, seq: Number(seq), attempt: Number(attempt), id: `${p}/${i}` }
          })
        const ackedBy = new Set(
          log.filter((line) => line.startsWith('acked ')).map((line) => line.slice(6)),
        )
        const counts = await queue.counts()
        // An ack refused as LEASE_LOST is only legitimate once the delivery could have expired:
        // its claim began at least the visibility timeout earlier (else the refusal is a bug).
        const lost = log.filter((line) => line.startsWith('lost '))
        for (const line of lost) {
          const [, , , code, ms] = line.split(' ')
          if (code === 'LEASE_LOST') expect(Number(ms), line).toBeGreaterThanOrEqual(VISIBILITY_MS)
        }

        // One total order with no gaps: each step is the next sequence or a re-delivery.
        for (let k = 1; k < got.length; k++) {
          const step = (got[k]?.seq ?? 0) - (got[k - 1]?.seq ?? 0)
          expect([0, 1], `step ${k}`).toContain(step)
        }
        const bySeq = new Map<number, string>()
        for (const delivery of got) {
          const known = bySeq.get(delivery.seq)
          if (known !== undefined) expect(delivery.id, `seq ${delivery.seq}`).toBe(known)
          bySeq.set(delivery.seq, delivery.id)
        }
        expect(got[0]?.seq).toBe(0)
        expect(bySeq.size).toBe(counts.next)
        expect(counts).toMatchObject({ head: counts.next, queuedCount: 0, iterations: counts.next })
        // No trigger stored twice, nothing no producer tried.
        const ids = [...bySeq.values()]
        expect(new Set(ids).size).toBe(ids.length)
        for (const id of ids) expect(tried.has(id), id).toBe(true)
        // Every acknowledged trigger delivered, under the sequence number its producer was told.
        for (const [id, seq] of acknowledged) expect(bySeq.get(seq), id).toBe(id)
        // Only a trigger in flight when its producer was killed (or gave up, restarted) has no answer.
        expect(acknowledged.size).toBeGreaterThanOrEqual(
          PRODUCERS * perProducer - kills.producer - restarts.producer,
        )
        // A duplicate only for a delivery in flight when its consumer was killed or ended: the last
        // one of its incarnation, not acked.
        let duplicates = 0
        for (let k = 1; k < got.length; k++) {
          const current = got[k]
          const previous = got[k - 1]
          if (current === undefined || previous === undefined || current.seq !== previous.seq)
            continue
          duplicates++
          expect(previous.inc).not.toBe(current.inc)
          expect(ackedBy.has(`${previous.inc} ${previous.seq}`)).toBe(false)
          expect(current.attempt).toBeGreaterThan(previous.attempt)
          const lastOfIncarnation = got.filter((delivery) => delivery.inc === previous.inc).at(-1)
          expect(lastOfIncarnation).toBe(previous)
        }
        expect(kills.consumer).toBeGreaterThan(0)
        expect(kills.producer).toBeGreaterThan(0)
        console.info(
          `${name}: ${counts.next} events (${PRODUCERS}x${perProducer} tried), kills ${JSON.stringify(kills)}, ` +
            `restarts after transient failures ${JSON.stringify(restarts)} (failed acks: ${lost.length}), ` +
            `${duplicates} re-deliveries, ${acknowledged.size} acknowledged triggers, ${Date.now() - started} ms`,
        )
        await backend.close()
      }, 600_000)

      it('a SIGSTOPped consumer whose delivery expired cannot ack after another consumer took the event', async () => {
        const backend = await target.open(namespace)
        const queue = await createDaemonQueue(backend, 'frozen')
        await queue.trigger({ p: 0, i: 0 })
        await queue.trigger({ p: 0, i: 1 })
        const frozen = spawnChild(
          CONSUMER,
          [target.url, 'frozen', 'frozen', '1000', join(dir, 'frozen.log'), 'once'],
          childEnv(),
        )
        try {
          expect(await waitForLine(frozen, /^claimed /)).toBe('claimed 0 1')
          frozen.kill('SIGSTOP')
          const other = await openDaemonQueue(backend, 'frozen')
          const taken = await claimEventually(other, {
            holder: 'thawed-out',
            visibilityTimeoutMs: 30_000,
          })
          expect([taken.seq, taken.attempt]).toEqual([0, 2])
          await taken.ack()
          frozen.kill('SIGCONT')
          const outcome = waitForLine(frozen, /^(acked|[A-Z_]+)$/)
          frozen.stdin?.write('ack\n')
          expect(await outcome).toBe('LEASE_LOST')
          // The stale ack moved nothing: event 1 is next, on its first attempt.
          expect(await queue.counts()).toMatchObject({ head: 1, iterations: 1 })
          const next = await claimEventually(queue, {})
          expect([next.seq, next.attempt, next.event]).toEqual([1, 1, { p: 0, i: 1 }])
        } finally {
          frozen.kill('SIGKILL')
          await backend.close()
        }
      }, 120_000)

      it('a daemon killed mid-turn is recovered in another process, the interrupted event first', async () => {
        const child = spawnChild(DAEMON, [target.url, 'killed'], daemonEnv())
        const backend = await target.open(namespace)
        try {
          expect(await waitForLine(child, /^claimed /)).toBe('claimed 0 1')
          child.kill('SIGKILL')
          await exited(child)
          let daemon: Daemon | null = null
          const deadline = Date.now() + 30_000
          while (daemon === null) {
            try {
              daemon = await resumeDaemon(backend, 'killed', {
                recoverRunning: true,
                holder: 'rescuer',
              })
            } catch (error) {
              // The dead owner's worker lease runs out after 1 s (longer on an observer clock).
              if (!isAgentStateError(error, 'CONCURRENT_RESUME') || Date.now() > deadline)
                throw error
              await sleep(100)
            }
          }
          let turn = null
          while (turn === null) {
            try {
              turn = await daemon.next()
            } catch (error) {
              if (!isAgentStateError(error, 'DELIVERY_IN_FLIGHT') || Date.now() > deadline)
                throw error
              await sleep(100)
            }
          }
          expect([turn.seq, turn.attempt, turn.event]).toEqual([0, 2, { n: 0 }])
          await daemon.ack(turn)
          const second = await daemon.next()
          expect([second?.seq, second?.attempt]).toEqual([1, 1])
          expect(daemon.worker.audit.map((entry) => entry.event)).toContain('worker_recovered')
        } finally {
          child.kill('SIGKILL')
          await backend.close()
        }
      }, 120_000)

      it('a daemon killed between ack and next (a kept delivery) loses nothing: the kept event comes next', async () => {
        const child = spawnChild(DAEMON, [target.url, 'killed-kept', 'kept'], daemonEnv())
        const backend = await target.open(namespace)
        try {
          expect(await waitForLine(child, /^acked /)).toBe('acked 0')
          child.kill('SIGKILL')
          await exited(child)
          const daemon = await recoverKilled(backend, 'killed-kept')
          const turn = await nextEventually(daemon)
          // The kept claim lapsed with the process: it counts as an attempt (docs/runtime/daemons.md).
          expect([turn.seq, turn.attempt, turn.event]).toEqual([1, 2, { n: 1 }])
          expect(daemon.state).toEqual({ acked: 0 })
          await daemon.ack(turn)
          const third = await daemon.next()
          expect([third?.seq, third?.attempt]).toEqual([2, 1])
        } finally {
          child.kill('SIGKILL')
          await backend.close()
        }
      }, 120_000)
    },
  )
}

/** `resumeDaemon` with `recoverRunning` once the killed owner's worker lease ran out. */
async function recoverKilled(backend: Backend, daemonId: string): Promise<Daemon> {
  const deadline = Date.now() + 30_000
  for (;;) {
    try {
      return await resumeDaemon(backend, daemonId, { recoverRunning: true, holder: 'rescuer' })
    } catch (error) {
      // The dead owner's worker lease runs out after 1 s (longer on an observer clock).
      if (!isAgentStateError(error, 'CONCURRENT_RESUME') || Date.now() > deadline) throw error
      await sleep(100)
    }
  }
}

/** `daemon.next()` once the dead owner's delivery lease ran out. */
async function nextEventually(daemon: Daemon): Promise<Delivery> {
  const deadline = Date.now() + 30_000
  for (;;) {
    try {
      const turn = await daemon.next()
      if (turn !== null) return turn
      throw new Error('queue empty')
    } catch (error) {
      if (!isAgentStateError(error, 'DELIVERY_IN_FLIGHT') || Date.now() > deadline) throw error
      await sleep(100)
    }
  }
}
