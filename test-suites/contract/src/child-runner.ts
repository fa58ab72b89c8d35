/**
 * Entry point of the suite's child processes (multi-process and crash tiers).
 * Run as `node --conditions=@agent-state/source --import tsx child-runner.ts`
 * with an IPC channel; it loads the backend module named in the `init`
 * message and runs the scenario steps the parent sends.
 */
import { pathToFileURL } from 'node:url'
import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import type {
  AckedWrites,
  ChildCommand,
  ChildMessage,
  FrozenWoke,
  InitMessage,
  RequestMessage,
  WatchReleased,
} from './child-protocol.js'
import { makeCheckedValue } from './child-values.js'

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (process.send === undefined) return reject(new Error('no IPC channel'))
    process.send(message, undefined, {}, (error) => (error ? reject(error) : resolve()))
  })
}

async function casIncrement(b: Backend, key: string): Promise<void> {
  for (;;) {
    const current = await b.get(key)
    const next = current === null ? 1 : Number(decoder.decode(current.value)) + 1
    try {
      if (current === null) await b.put(key, encoder.encode(String(next)), { ifNoneMatch: '*' })
      else await b.put(key, encoder.encode(String(next)), { ifMatch: current.meta.version })
      return
    } catch (error) {
      if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
    }
  }
}

async function acquireWaiting(
  b: Backend,
  key: string,
  holder: string,
  ttlMs: number,
  waitMs: number,
): Promise<Lease> {
  const deadline = Date.now() + waitMs
  for (;;) {
    try {
      return await b.acquireLease(key, { holder, ttlMs })
    } catch (error) {
      if (!isAgentStateError(error, 'LEASE_HELD') || Date.now() > deadline) throw error
      await sleep(5 + Math.random() * 10)
    }
  }
}

async function appendFenced(b: Backend, key: string, lease: Lease, entry: unknown): Promise<void> {
  for (;;) {
    const current = await b.get(key)
    const log = current === null ? [] : (JSON.parse(decoder.decode(current.value)) as unknown[])
    log.push(entry)
    const data = encoder.encode(JSON.stringify(log))
    try {
      if (current === null) await b.put(key, data, { ifNoneMatch: '*', lease })
      else await b.put(key, data, { ifMatch: current.meta.version, lease })
      return
    } catch (error) {
      if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
    }
  }
}

async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    return `ok:${JSON.stringify(await run())}`
  } catch (error) {
    return isAgentStateError(error) ? error.code : `error:${String(error)}`
  }
}

async function crashWriter(
  b: Backend,
  command: Extract<ChildCommand, { type: 'crash-writer' }>,
): Promise<never> {
  const lease = await b.acquireLease(command.leaseKey, {
    holder: `crash-${process.pid}`,
    ttlMs: command.leaseTtlMs,
  })
  await send({ type: 'crash-lease', token: lease.token })
  const versions = new Map<string, string>()
  let counter = command.start
  for (let seq = 0; ; seq++) {
    const key = `${command.prefix}k${Math.floor(Math.random() * 6)}`
    const roll = Math.random()
    counter++
    const kind = roll < 0.15 ? 'delete' : roll < 0.45 && versions.has(key) ? 'cas' : 'put'
    await send({
      type: 'intent',
      seq,
      op: kind === 'delete' ? { kind, key } : { kind, key, counter },
    })
    if (kind === 'delete') {
      await b.delete(key)
      versions.delete(key)
      await send({ type: 'ack', seq, op: kind })
      continue
    }
    const value = makeCheckedValue(key, counter, Math.floor(Math.random() ** 3 * 200_000))
    try {
      const meta =
        kind === 'cas'
          ? await b.put(key, value, { ifMatch: versions.get(key) as string })
          : await b.put(key, value)
      versions.set(key, meta.version)
      await send({ type: 'ack', seq, op: kind, version: meta.version })
    } catch (error) {
      if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
      versions.delete(key)
      await send({ type: 'ack', seq, op: kind })
    }
  }
}

async function ackedWrites(
  b: Backend,
  command: Extract<ChildCommand, { type: 'acked-writes' }>,
): Promise<AckedWrites> {
  const first = await b.put(command.key, encoder.encode('first'), { ifNoneMatch: '*' })
  const value = makeCheckedValue(command.key, command.counter, command.filler)
  const last = await b.put(command.key, value, { ifMatch: first.version })
  await b.put(command.goneKey, encoder.encode('gone'))
  if (!(await b.delete(command.goneKey))) throw new Error(`${command.goneKey} was not deleted`)
  return { version: last.version }
}

/** Where a stepped backend's holder stops itself (frozen-writer tier). */
let stopAt: { step: string; skip: number } | undefined

/** The `onStep` hook of a stepped backend: synchronous, so the stop is exactly at the step. */
function onStep(step: string): void {
  if (stopAt === undefined || step !== stopAt.step) return
  if (stopAt.skip-- > 0) return
  stopAt = undefined
  process.kill(process.pid, 'SIGSTOP')
}

async function frozenHolder(
  b: Backend,
  command: Extract<ChildCommand, { type: 'frozen-holder' }>,
): Promise<FrozenWoke> {
  let lease = await b.acquireLease(command.key, { holder: 'frozen', ttlMs: command.ttlMs })
  await send({ type: 'frozen-held', token: lease.token })
  if (command.step !== null) stopAt = { step: command.step, skip: command.skip }
  let writes = 0
  let failed: string
  for (;;) {
    try {
      writes++
      await b.put(command.key, encoder.encode(`frozen ${writes}`), { lease })
      lease = await b.renewLease(lease)
    } catch (error) {
      failed = isAgentStateError(error) ? error.code : `error:${String(error)}`
      break
    }
  }
  stopAt = undefined
  const held = lease
  const renew = await outcome(() => b.renewLease(held))
  const put = await outcome(() =>
    b.put(command.key, encoder.encode('frozen late'), { lease: held }),
  )
  const release = await outcome(() => b.releaseLease(held))
  return { failed, renew, put, release, writes }
}

/** Set once the watch-release check ran: the child then ignores every message. */
let released = false

async function watchRelease(
  b: Backend,
  command: Extract<ChildCommand, { type: 'watch-release' }>,
): Promise<WatchReleased> {
  if (b.watch === undefined) throw new Error('the backend has no watch')
  const controller = new AbortController()
  const iterator = b.watch(command.prefix, { signal: controller.signal })[Symbol.asyncIterator]()
  const first = await iterator.next()
  const pending = iterator.next()
  if (command.how === 'abort') controller.abort()
  else await b.close()
  let timer: NodeJS.Timeout | undefined
  const ended = await Promise.race([
    pending.then((result) => result.done === true),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), 5000)
    }),
  ])
  clearTimeout(timer)
  if (command.how === 'abort') await b.close()
  released = true
  return { first: first.done === true ? 'done' : first.value.kind, ended }
}

async function run(b: Backend, command: ChildCommand): Promise<unknown> {
  switch (command.type) {
    case 'increments':
      for (let i = 0; i < command.count; i++) await casIncrement(b, command.key)
      return command.count
    case 'create-once':
      try {
        await b.put(
          command.key,
          encoder.encode(command.value),
          command.ifMatch === undefined ? { ifNoneMatch: '*' } : { ifMatch: command.ifMatch },
        )
        return 'won'
      } catch (error) {
        if (isAgentStateError(error, 'PRECONDITION_FAILED')) return 'lost'
        throw error
      }
    case 'lease-log': {
      const holder = `child-${process.pid}`
      for (let round = 0; round < command.rounds; round++) {
        const lease = await acquireWaiting(b, command.lockKey, holder, command.ttlMs, 60_000)
        await appendFenced(b, command.logKey, lease, { token: lease.token, holder, phase: 'start' })
        await sleep(Math.random() * 3)
        await appendFenced(b, command.logKey, lease, { token: lease.token, holder, phase: 'end' })
        await b.releaseLease(lease)
      }
      return command.rounds
    }
    case 'acquire':
      return acquireWaiting(b, command.key, command.holder, command.ttlMs, command.waitMs)
    case 'fenced-put':
      return (
        await b.put(command.key, encoder.encode(command.value), { lease: command.lease as Lease })
      ).version
    case 'stale-attempt': {
      const lease = command.lease as Lease
      return {
        put: await outcome(() => b.put(command.key, encoder.encode('stale'), { lease })),
        delete: await outcome(() => b.delete(command.key, { lease })),
        renew: await outcome(() => b.renewLease(lease)),
        release: await outcome(() => b.releaseLease(lease)),
      }
    }
    case 'acked-writes':
      return ackedWrites(b, command)
    case 'crash-writer':
      return crashWriter(b, command)
    case 'frozen-holder':
      return frozenHolder(b, command)
    case 'burst': {
      for (let i = 0; i < command.writes; i++) {
        const key = command.keys[i % command.keys.length] as string
        if (i % 7 === 6) await b.delete(key)
        else await b.put(key, encoder.encode(`${command.tag}:${i}`))
      }
      return command.writes
    }
    case 'watch-release':
      return watchRelease(b, command)
    case 'put-many':
      for (const key of command.keys) await b.put(key, encoder.encode(command.value))
      return command.keys.length
    case 'churn': {
      const until = Date.now() + command.durationMs
      let writes = 0
      for (let i = 0; Date.now() < until; i++) {
        const n = ((i * 7 + command.seed * 13) % 121) | 1
        const key = `${command.prefix}${String(n).padStart(3, '0')}${i % 3 === 0 ? '/deep' : ''}`
        if (i % 2 === 0) await b.put(key, encoder.encode('churn'))
        else await b.delete(key)
        writes++
      }
      return writes
    }
  }
}

let backend: Backend | undefined
let queue: Promise<void> = Promise.resolve()

process.on('message', (raw: InitMessage | RequestMessage) => {
  queue = queue.then(async () => {
    if (raw.type === 'init') {
      const loaded = (await import(pathToFileURL(raw.module).href)) as {
        createBackend(options: unknown, ctx: { namespace: string }): Backend | Promise<Backend>
        createSteppedBackend?(
          options: unknown,
          ctx: { namespace: string },
          onStep: (step: string) => void,
        ): Backend | Promise<Backend>
      }
      const ctx = { namespace: raw.namespace }
      if (raw.stepped === true) {
        if (loaded.createSteppedBackend === undefined) {
          throw new Error(`${raw.module} gives writeSteps but exports no createSteppedBackend`)
        }
        backend = await loaded.createSteppedBackend(raw.options, ctx, onStep)
      } else backend = await loaded.createBackend(raw.options, ctx)
      await send({ type: 'ready' })
      return
    }
    try {
      if (backend === undefined) throw new Error('not initialised')
      const result = await run(backend, raw.command)
      await send({ type: 'reply', id: raw.id, ok: true, result })
      if (released) {
        // Nothing of the suite's keeps the process alive now: only a leaked handle can.
        process.removeAllListeners('message')
        process.removeAllListeners('disconnect')
        process.channel?.unref()
      }
    } catch (error) {
      const code = isAgentStateError(error) ? error.code : undefined
      await send({
        type: 'reply',
        id: raw.id,
        ok: false,
        error: error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error),
        ...(code === undefined ? {} : { code }),
      })
    }
  })
})
process.on('disconnect', () => {
  void backend?.close().finally(() => process.exit(0))
  if (backend === undefined) process.exit(0)
})
