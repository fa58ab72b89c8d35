import { createCheckpointSaver } from '@agent-state/langgraph'
import { createPostgresBackend } from '@agent-state/postgres'
import {
  type BaseCheckpointSaver,
  type Checkpoint,
  type CheckpointMetadata,
  emptyCheckpoint,
  uuid6,
} from '@langchain/langgraph-checkpoint'
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres'
import pg from 'pg'

/**
 * The LangGraph savers of `bench:postgres`, on the same server and pools of
 * the same size:
 * - `agent-state`: `@agent-state/langgraph` on `@agent-state/postgres`;
 * - `agent-state owned`: the same with thread ownership (`ownership`: each
 *   thread's writes are fenced by its lease), what the target is about;
 * - `PostgresSaver`: `@langchain/langgraph-checkpoint-postgres` (upserts,
 *   last writer wins, no fencing), in its own schema.
 *
 * Workloads, each caller on its own thread (no contention between callers):
 * `lg-put` a checkpoint whose one channel carries 1 KiB (parent = the
 * caller's previous checkpoint), `lg-getTuple` the thread's latest
 * checkpoint, `lg-list` the thread's 10 newest checkpoints.
 */

/** Checkpoints each thread holds before the timed runs (what `list` pages over). */
const SEEDED = 20
const PAYLOAD = 'x'.repeat(1024)

export type LangGraphWorkload = 'lg-put' | 'lg-getTuple' | 'lg-list'
type Op = (worker: number, i: number) => Promise<unknown>

export interface LangGraphPath {
  readonly name: string
  readonly ops: Record<LangGraphWorkload, Op>
  close(): Promise<void>
}

function checkpointOf(step: number): Checkpoint {
  return {
    ...emptyCheckpoint(),
    id: uuid6(-1),
    channel_values: { messages: PAYLOAD },
    channel_versions: { messages: step },
  }
}

/** The operations on `saver`, threads `<tag>-<worker>`, each seeded with {@link SEEDED} checkpoints. */
async function pathOf(
  name: string,
  saver: BaseCheckpointSaver,
  workers: number,
  close: () => Promise<void>,
): Promise<LangGraphPath> {
  const thread = (w: number) => `bench-${w}`
  const last = new Map<number, string>()
  const steps = new Map<number, number>()
  const put = async (w: number) => {
    const step = (steps.get(w) ?? 0) + 1
    steps.set(w, step)
    const parent = last.get(w)
    const config = {
      configurable: {
        thread_id: thread(w),
        checkpoint_ns: '',
        ...(parent === undefined ? {} : { checkpoint_id: parent }),
      },
    }
    const metadata: CheckpointMetadata = { source: 'loop', step, parents: {} }
    const saved = await saver.put(config, checkpointOf(step), metadata, { messages: step })
    last.set(w, saved.configurable?.checkpoint_id as string)
  }
  // Threads seeded side by side (each thread's checkpoints in order: each is the next one's parent).
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let s = 0; s < SEEDED; s++) await put(w)
    }),
  )
  return {
    name,
    ops: {
      'lg-put': (w) => put(w),
      'lg-getTuple': (w) => saver.getTuple({ configurable: { thread_id: thread(w) } }),
      'lg-list': async (w) => {
        let n = 0
        for await (const _ of saver.list({ configurable: { thread_id: thread(w) } }, { limit: 10 }))
          n++
        if (n !== 10) throw new Error(`list returned ${n} checkpoints, not 10`)
      },
    },
    close,
  }
}

/** The three saver paths on `url`, for up to `workers` callers, pools of `pool` connections. */
export async function langGraphPaths(
  url: string,
  workers: number,
  pool: number,
): Promise<LangGraphPath[]> {
  const plainBackend = createPostgresBackend({
    connectionString: url,
    namespace: 'lg-plain',
    poolSize: pool,
  })
  const ownedBackend = createPostgresBackend({
    connectionString: url,
    namespace: 'lg-owned',
    poolSize: pool,
  })
  const peerPool = new pg.Pool({ connectionString: url, max: pool })
  // The server's shutdown ends the idle connections the pool is still closing: not a crash.
  peerPool.on('error', () => {})
  const peer = new PostgresSaver(peerPool, undefined, { schema: 'bench_langgraph' })
  await peerPool.query('CREATE SCHEMA IF NOT EXISTS bench_langgraph')
  await peer.setup()
  return [
    await pathOf('agent-state', createCheckpointSaver({ backend: plainBackend }), workers, () =>
      plainBackend.close(),
    ),
    await pathOf(
      'agent-state owned',
      createCheckpointSaver({
        backend: ownedBackend,
        ownership: { holder: 'bench', ttlMs: 60_000 },
      }),
      workers,
      () => ownedBackend.close(),
    ),
    await pathOf('PostgresSaver', peer, workers, () => peerPool.end()),
  ]
}
