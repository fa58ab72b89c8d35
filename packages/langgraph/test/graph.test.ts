import type { Backend } from '@agent-state/core'
import { Annotation, Command, END, interrupt, START, StateGraph } from '@langchain/langgraph'
import { beforeAll, expect, it } from 'vitest'
import { createCheckpointSaver } from '../src/index.js'
import { BACKENDS, describeEachBackend } from './backends.js'

/** A small real graph: a reducer channel, a fan-out (parallel tasks), and an interrupt. */
function buildGraph() {
  const State = Annotation.Root({
    log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
    approved: Annotation<boolean>(),
  })
  return new StateGraph(State)
    .addNode('plan', () => ({ log: ['plan'] }))
    .addNode('left', () => ({ log: ['left'] }))
    .addNode('right', () => ({ log: ['right'] }))
    .addNode('approve', () => {
      const answer = interrupt('approve?') as boolean
      return { approved: answer, log: [`approved=${answer}`] }
    })
    .addEdge(START, 'plan')
    .addEdge('plan', 'left')
    .addEdge('plan', 'right')
    .addEdge('left', 'approve')
    .addEdge('right', 'approve')
    .addEdge('approve', END)
}

describeEachBackend(
  BACKENDS,
  (name) => `a LangGraph StateGraph on ${name}`,
  (shared) => {
    let backend: Backend
    beforeAll(() => {
      backend = shared.backend()
    })

    it('runs to an interrupt, resumes from a fresh saver instance, and keeps its history', async () => {
      const config = { configurable: { thread_id: 'run-1' } }
      const first = buildGraph().compile({ checkpointer: createCheckpointSaver({ backend }) })
      await first.invoke({ log: ['start'] }, config)
      const paused = await first.getState(config)
      expect(paused.next).toEqual(['approve'])
      expect(paused.values.log).toEqual(['start', 'plan', 'left', 'right'])
      // Another saver on the same storage: as a second process would resume.
      const second = buildGraph().compile({ checkpointer: createCheckpointSaver({ backend }) })
      const done = await second.invoke(new Command({ resume: true }), config)
      expect(done.log).toEqual(['start', 'plan', 'left', 'right', 'approved=true'])
      expect(done.approved).toBe(true)
      const history = []
      for await (const snapshot of second.getStateHistory(config)) history.push(snapshot)
      expect(history.length).toBeGreaterThanOrEqual(4)
      expect(history[0]?.values.log).toEqual(done.log)
      expect(history.at(-1)?.values).toEqual({ log: [] })
    })

    it('with thread ownership, a second owner waits for the first to release the thread', async () => {
      const config = { configurable: { thread_id: 'owned-1' } }
      const ownerA = createCheckpointSaver({ backend, ownership: { holder: 'a', ttlMs: 30_000 } })
      const ownerB = createCheckpointSaver({ backend, ownership: { holder: 'b', ttlMs: 30_000 } })
      await buildGraph()
        .compile({ checkpointer: ownerA })
        .invoke({ log: ['start'] }, config)
      const graphB = buildGraph().compile({ checkpointer: ownerB })
      await expect(graphB.invoke(new Command({ resume: false }), config)).rejects.toMatchObject({
        code: 'LEASE_HELD',
      })
      expect(await ownerA.releaseThread('owned-1')).toBe(true)
      const done = await graphB.invoke(new Command({ resume: false }), config)
      expect(done.log).toEqual(['start', 'plan', 'left', 'right', 'approved=false'])
    })
  },
)
