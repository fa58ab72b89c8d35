import type { BenchConfig } from './config.js'
import type { Operation } from './measure.js'
import {
  type BackendKind,
  type CasToken,
  forEachConcurrent,
  populatedKey,
  type Subject,
} from './subject.js'

/** A workload set up on one subject at one concurrency. */
export interface WorkloadInstance {
  readonly op: Operation
  /**
   * Called (untimed) before every run, warm-up included. Resolves an
   * operation budget for the run, or `undefined` for "time only".
   */
  beforeRun?(): Promise<number | undefined>
}

/** One row of the report: an operation, a value size, maybe a population. */
export interface Workload {
  /** Stable id, for example `put-1KiB` or `list-10k`. */
  readonly id: string
  /** Which operation the row measures, as it appears in the ratio tables. */
  readonly op: 'put' | 'cas' | 'create' | 'get' | 'head' | 'delete' | 'lease' | 'list'
  readonly title: string
  readonly valueBytes: number
  /** Keys present under the workload's prefix (listing and growth rows). */
  readonly population?: number
  readonly concurrencies: readonly number[]
  /** Whether the subject runs it at this concurrency. */
  supports(subject: Subject, concurrency: number): boolean
  instantiate(subject: Subject, concurrency: number): Promise<WorkloadInstance>
}

/** Human size: 1KiB, 64KiB, 1MiB. */
export function sizeLabel(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)}MiB`
  if (bytes % 1024 === 0) return `${bytes / 1024}KiB`
  return `${bytes}B`
}

/** Human count: 1k, 10k, 100k. */
export function countLabel(count: number): string {
  return count % 1000 === 0 ? `${count / 1000}k` : String(count)
}

/**
 * One value buffer per worker, each write stamped with a fresh counter: a
 * worker never reuses its buffer before its previous operation settled, and
 * no two writes store identical bytes (SQLite skips the commit of an
 * unchanged cell; S3 ETags hash the body).
 */
class Values {
  private readonly buffers: Uint8Array[] = []
  private stamp = 0

  constructor(
    private readonly size: number,
    workers: number,
  ) {
    for (let worker = 0; worker < workers; worker++) {
      const buffer = new Uint8Array(size)
      for (let index = 0; index < size; index++) buffer[index] = (index * 31 + worker) & 0xff
      this.buffers.push(buffer)
    }
  }

  /** The worker's buffer with a new stamp in its first 8 bytes. */
  next(worker: number): Uint8Array {
    const buffer = this.buffers[worker] as Uint8Array
    const stamp = ++this.stamp
    const view = new DataView(buffer.buffer, buffer.byteOffset, Math.min(8, this.size))
    if (this.size >= 8) view.setFloat64(0, stamp + Math.random())
    else buffer[0] = stamp & 0xff
    return buffer
  }
}

/** A deterministic spread of `seq` over `count` keys (a multiplicative hash, so neighbours differ). */
function spread(seq: number, count: number): number {
  return Math.floor((((seq * 2654435761) % 4294967296) / 4294967296) * count)
}

/** The per-backend run id keeps keys of repeated runs apart (S3 and Redis outlive a run). */
function base(subject: Subject, id: string, concurrency: number): string {
  return `bench/${id}/c${concurrency}/${subject.path}`
}

function requireBytes(value: Uint8Array | null, key: string, size: number): void {
  if (value === null) throw new Error(`get ${key}: missing`)
  if (value.byteLength !== size)
    throw new Error(`get ${key}: ${value.byteLength} bytes, expected ${size}`)
}

/** Populates `count` keys under `prefix` with distinct `size`-byte values via plain puts, 16 at a time. */
async function fill(subject: Subject, prefix: string, count: number, size: number): Promise<void> {
  await forEachConcurrent(count, 16, async (index) => {
    const value = new Uint8Array(size).fill(index & 0xff)
    if (size >= 4) new DataView(value.buffer).setUint32(0, index)
    await subject.put(populatedKey(prefix, index), value)
  })
}

/** Fewer keys for big values: 1 MiB x 256 keys x 4 paths would not fit the in-RAM S3 store. */
function keyspaceFor(config: BenchConfig, size: number): number {
  if (size >= 1024 * 1024) return Math.min(config.keyspace, 32)
  if (size >= 64 * 1024) return Math.min(config.keyspace, 64)
  return config.keyspace
}

function putWorkload(
  config: BenchConfig,
  size: number,
  concurrencies: readonly number[],
): Workload {
  const id = `put-${sizeLabel(size)}`
  return {
    id,
    op: 'put',
    title: `put ${sizeLabel(size)} (unconditional)`,
    valueBytes: size,
    concurrencies,
    supports: () => true,
    async instantiate(subject, concurrency) {
      const prefix = `${base(subject, id, concurrency)}/`
      const values = new Values(size, concurrency)
      const keyspace = keyspaceFor(config, size)
      return {
        op: (worker, seq) => subject.put(populatedKey(prefix, seq % keyspace), values.next(worker)),
      }
    },
  }
}

function getWorkload(
  config: BenchConfig,
  size: number,
  concurrencies: readonly number[],
): Workload {
  const id = `get-${sizeLabel(size)}`
  return {
    id,
    op: 'get',
    title: `get ${sizeLabel(size)}`,
    valueBytes: size,
    concurrencies,
    supports: () => true,
    async instantiate(subject, concurrency) {
      const prefix = `${base(subject, id, concurrency)}/`
      const keyspace = keyspaceFor(config, size)
      await fill(subject, prefix, keyspace, size)
      return {
        op: async (_worker, seq) => {
          const key = populatedKey(prefix, spread(seq, keyspace))
          requireBytes(await subject.get(key), key, size)
        },
      }
    },
  }
}

function headWorkload(config: BenchConfig, concurrencies: readonly number[]): Workload {
  return {
    id: 'head',
    op: 'head',
    title: 'head (1 KiB value)',
    valueBytes: 1024,
    concurrencies,
    supports: () => true,
    async instantiate(subject, concurrency) {
      const prefix = `${base(subject, 'head', concurrency)}/`
      const keyspace = config.keyspace
      await fill(subject, prefix, keyspace, 1024)
      return {
        op: async (_worker, seq) => {
          const key = populatedKey(prefix, spread(seq, keyspace))
          if (!(await subject.head(key))) throw new Error(`head ${key}: missing`)
        },
      }
    },
  }
}

function casWorkload(config: BenchConfig, concurrencies: readonly number[]): Workload {
  return {
    id: 'cas',
    op: 'cas',
    title: 'put 1 KiB with ifMatch (compare-and-set)',
    valueBytes: 1024,
    concurrencies,
    supports: (subject) => subject.cas !== undefined && subject.casInit !== undefined,
    async instantiate(subject, concurrency) {
      const prefix = `${base(subject, 'cas', concurrency)}/`
      const perWorker = Math.max(1, Math.floor(config.keyspace / concurrency))
      const values = new Values(1024, concurrency)
      // Each worker owns its keys, so every CAS is expected to win.
      const tokens: CasToken[][] = []
      const counters: number[] = []
      for (let worker = 0; worker < concurrency; worker++) {
        tokens.push([])
        counters.push(0)
      }
      const casInit = subject.casInit as NonNullable<Subject['casInit']>
      const cas = subject.cas as NonNullable<Subject['cas']>
      await forEachConcurrent(concurrency * perWorker, 16, async (index) => {
        const worker = index % concurrency
        const slot = Math.floor(index / concurrency)
        ;(tokens[worker] as CasToken[])[slot] = await casInit(
          populatedKey(prefix, index),
          values.next(worker),
        )
      })
      return {
        op: async (worker) => {
          const slot = (counters[worker] as number) % perWorker
          counters[worker] = (counters[worker] as number) + 1
          const key = populatedKey(prefix, slot * concurrency + worker)
          const own = tokens[worker] as CasToken[]
          own[slot] = await cas(key, values.next(worker), own[slot])
        },
      }
    },
  }
}

function createWorkload(budget: number, concurrencies: readonly number[]): Workload {
  return {
    id: 'create',
    op: 'create',
    // Bounded: every create adds a key, and millions of kept values would make
    // the rest of the run measure the garbage collector.
    title: `create-if-absent 1 KiB (new keys, at most ${budget} per run)`,
    valueBytes: 1024,
    concurrencies,
    supports: (subject) => subject.create !== undefined,
    async instantiate(subject, concurrency) {
      const values = new Values(1024, concurrency)
      const create = subject.create as NonNullable<Subject['create']>
      let run = 0
      let prefix = ''
      let created = 0
      return {
        async beforeRun() {
          // Remove the previous run's keys (untimed), so values do not pile up.
          const previous = prefix
          const count = created
          await forEachConcurrent(count, 16, (index) =>
            subject.delete(populatedKey(previous, index)),
          )
          prefix = `${base(subject, 'create', concurrency)}/r${run++}-${Date.now()}/`
          created = 0
          return budget
        },
        op: async (worker, seq) => {
          await create(populatedKey(prefix, seq), values.next(worker))
          created = Math.max(created, seq + 1)
        },
      }
    },
  }
}

function deleteWorkload(poolSize: number, concurrencies: readonly number[]): Workload {
  return {
    id: 'delete',
    op: 'delete',
    title: `delete (existing keys, pool of ${poolSize} per run)`,
    valueBytes: 1024,
    concurrencies,
    supports: () => true,
    async instantiate(subject, concurrency) {
      let run = 0
      let prefix = ''
      return {
        async beforeRun() {
          prefix = `${base(subject, 'delete', concurrency)}/r${run++}/`
          await fill(subject, prefix, poolSize, 1024)
          return poolSize
        },
        op: (_worker, seq) => subject.delete(populatedKey(prefix, seq)),
      }
    },
  }
}

function leaseWorkload(concurrencies: readonly number[]): Workload {
  return {
    id: 'lease',
    op: 'lease',
    title: 'lease acquire → renew → release',
    valueBytes: 0,
    concurrencies,
    supports: (subject) => subject.leaseCycle !== undefined,
    async instantiate(subject, concurrency) {
      const prefix = `${base(subject, 'lease', concurrency)}/`
      const cycle = subject.leaseCycle as NonNullable<Subject['leaseCycle']>
      return { op: (worker) => cycle(populatedKey(prefix, worker)) }
    },
  }
}

/** Subjects whose population of `count` keys exists already (populating 100k keys is slow). */
const populated = new WeakMap<Subject, Set<number>>()

/** Where the `count`-key population of a subject lives. */
function populationPrefix(count: number): string {
  return `pop/${countLabel(count)}/`
}

async function ensurePopulation(subject: Subject, count: number): Promise<string> {
  const prefix = populationPrefix(count)
  let done = populated.get(subject)
  if (done === undefined) {
    done = new Set()
    populated.set(subject, done)
  }
  if (!done.has(count)) {
    const value = new Uint8Array(1024).fill(7)
    if (subject.populate !== undefined) await subject.populate(prefix, count, value)
    else await fill(subject, prefix, count, 1024)
    done.add(count)
  }
  return prefix
}

function listWorkload(count: number, concurrencies: readonly number[]): Workload {
  const pageSize = 1000
  return {
    id: `list-${countLabel(count)}`,
    op: 'list',
    title: `list one page of ${pageSize}, walking ${countLabel(count)} keys`,
    valueBytes: 1024,
    population: count,
    concurrencies,
    // A peer page reads every key of the store; 64 of those at once only measure a pile-up.
    supports: (subject, concurrency) =>
      subject.listPage !== undefined &&
      (concurrency === 1 || subject.path === 'agent-state' || subject.path === 'raw'),
    async instantiate(subject, concurrency) {
      const prefix = await ensurePopulation(subject, count)
      const listPage = subject.listPage as NonNullable<Subject['listPage']>
      const cursors: (string | undefined)[] = new Array(concurrency).fill(undefined)
      const seen: number[] = new Array(concurrency).fill(0)
      return {
        op: async (worker) => {
          const page = await listPage(prefix, pageSize, cursors[worker])
          const expected = Math.min(pageSize, count - (seen[worker] as number))
          if (page.keys.length !== expected) {
            throw new Error(`list page of ${page.keys.length} keys, expected ${expected}`)
          }
          if (page.cursor === undefined) {
            if ((seen[worker] as number) + page.keys.length !== count) {
              throw new Error(
                `listing ended after ${(seen[worker] as number) + page.keys.length} of ${count} keys`,
              )
            }
            cursors[worker] = undefined
            seen[worker] = 0
          } else {
            cursors[worker] = page.cursor
            seen[worker] = (seen[worker] as number) + page.keys.length
          }
        },
      }
    },
  }
}

function growthWorkload(op: 'put' | 'get', count: number): Workload {
  return {
    id: `${op}-at-${countLabel(count)}`,
    op,
    title: `${op} 1 KiB among ${countLabel(count)} keys`,
    valueBytes: 1024,
    population: count,
    concurrencies: [1],
    supports: () => true,
    async instantiate(subject) {
      const prefix = await ensurePopulation(subject, count)
      const values = new Values(1024, 1)
      return {
        op:
          op === 'put'
            ? (worker, seq) =>
                subject.put(populatedKey(prefix, spread(seq, count)), values.next(worker))
            : async (_worker, seq) => {
                const key = populatedKey(prefix, spread(seq, count))
                requireBytes(await subject.get(key), key, 1024)
              },
      }
    },
  }
}

/**
 * Keys prepared per delete run, and the most keys one create run adds, by
 * default: about one repetition's worth on each backend.
 */
const OP_POOL: Record<BackendKind, number> = {
  memory: 20_000,
  fs: 300,
  sqlite: 1000,
  redis: 3000,
  s3: 100,
}

/** The workloads of one backend, in run order. */
export function workloadsFor(config: BenchConfig, backend: BackendKind): Workload[] {
  const c = config.concurrencies
  const sizes = config.valueSizes
  const pool = config.deletePool ?? OP_POOL[backend]
  const list: Workload[] = [
    putWorkload(config, 1024, c),
    casWorkload(config, c),
    createWorkload(pool, c),
    getWorkload(config, 1024, c),
    headWorkload(config, c),
    deleteWorkload(pool, c),
    leaseWorkload(c),
  ]
  for (const size of sizes) {
    if (size === 1024) continue
    list.push(putWorkload(config, size, config.sizeConcurrencies))
    list.push(getWorkload(config, size, config.sizeConcurrencies))
  }
  const listMax = backend === 's3' ? config.s3ListMax : Number.POSITIVE_INFINITY
  for (const count of config.listSizes) {
    if (count > listMax) continue
    list.push(listWorkload(count, c))
    list.push(growthWorkload('put', count))
    list.push(growthWorkload('get', count))
  }
  return config.only === undefined
    ? list
    : list.filter((workload) => config.only?.test(workload.id))
}
