import { describe, expect, it } from 'vitest'
import {
  type CasInput,
  type CasOutput,
  casRegisterModel,
  checkLinearizability,
  type HistoryOp,
} from '../src/index.js'

type Op = HistoryOp<CasInput, CasOutput>

const get = (version: string | null, invoke: number, response: number, key = 'k'): Op => ({
  key,
  input: { type: 'get' },
  output: { type: 'get', version },
  invoke,
  response,
})
const create = (version: string | null, invoke: number, response: number, key = 'k'): Op => ({
  key,
  input: { type: 'put', ifNoneMatch: true },
  output: version === null ? { type: 'put', ok: false } : { type: 'put', ok: true, version },
  invoke,
  response,
})
const cas = (
  ifMatch: string,
  version: string | null,
  invoke: number,
  response: number,
  key = 'k',
): Op => ({
  key,
  input: { type: 'put', ifMatch },
  output: version === null ? { type: 'put', ok: false } : { type: 'put', ok: true, version },
  invoke,
  response,
})

describe('checkLinearizability on a compare-and-set register', () => {
  it('accepts a sequential history', () => {
    const history = [get(null, 0, 1), create('v1', 2, 3), cas('v1', 'v2', 4, 5), get('v2', 6, 7)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('linearizable')
  })

  it('accepts overlapping operations that can be ordered', () => {
    // The get overlaps the create and may see either state; the losing create overlaps the winner.
    const history = [create('v1', 0, 10), create(null, 1, 9), get('v1', 2, 3), get(null, 0.5, 1.5)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('linearizable')
  })

  it('rejects two winners of the same create-if-absent', () => {
    const history = [create('v1', 0, 10), create('v2', 1, 9)]
    expect(checkLinearizability(history, casRegisterModel)).toMatchObject({
      status: 'not-linearizable',
      key: 'k',
    })
  })

  it('rejects two successful CAS writes from the same version (a lost update)', () => {
    const history = [create('v1', 0, 1), cas('v1', 'v2', 2, 5), cas('v1', 'v3', 3, 6)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('not-linearizable')
  })

  it('rejects a stale read after a completed write', () => {
    const history = [create('v1', 0, 1), cas('v1', 'v2', 2, 3), get('v1', 4, 5)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('not-linearizable')
  })

  it('rejects a CAS that failed although its version was current and nothing overlapped', () => {
    const history = [create('v1', 0, 1), cas('v1', null, 2, 3)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('not-linearizable')
  })

  it('accepts a failed CAS when a concurrent write explains it', () => {
    const history = [create('v1', 0, 1), cas('v1', null, 2, 6), cas('v1', 'v2', 3, 4)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('linearizable')
  })

  it('checks keys independently and names the failing key', () => {
    const history = [create('a1', 0, 1, 'a'), create('b1', 0, 1, 'b'), get(null, 2, 3, 'b')]
    expect(checkLinearizability(history, casRegisterModel)).toMatchObject({
      status: 'not-linearizable',
      key: 'b',
    })
  })

  it('drops a pending put that never responded when nothing observed it', () => {
    const pending: Op = { ...create('x', 1, Number.POSITIVE_INFINITY), pending: true }
    const history = [create('v1', 0, 0.5), pending, get('v1', 2, 3)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('linearizable')
  })

  it('reports undecided when the search budget runs out', () => {
    const history = Array.from({ length: 12 }, (_, i) => get(null, 0, 100 + i))
    history.push(get('never', 200, 201))
    expect(checkLinearizability(history, casRegisterModel, { budget: 3 }).status).toBe('undecided')
  })

  it('handles a long concurrent history quickly', () => {
    const history: Op[] = [create('v0', 0, 1)]
    for (let i = 1; i <= 300; i++) {
      history.push(cas(`v${i - 1}`, `v${i}`, i * 10, i * 10 + 15))
      history.push(cas(`v${i - 1}`, null, i * 10 + 1, i * 10 + 14))
      history.push(get(`v${i - 1}`, i * 10 - 2, i * 10 + 5))
    }
    expect(checkLinearizability(history, casRegisterModel).status).toBe('linearizable')
  })
})

const del = (
  ifMatch: string | undefined,
  result: boolean | 'failed',
  invoke: number,
  response: number,
): Op => ({
  key: 'k',
  input: ifMatch === undefined ? { type: 'delete' } : { type: 'delete', ifMatch },
  output:
    result === 'failed'
      ? { type: 'delete', ok: false }
      : { type: 'delete', ok: true, existed: result },
  invoke,
  response,
})

describe('casRegisterModel with deletes', () => {
  it('accepts a delete that saw the value, then a re-create', () => {
    const history = [create('v1', 0, 1), del('v1', true, 2, 3), get(null, 4, 5), create('v2', 6, 7)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('linearizable')
  })

  it('rejects a value read after a delete that finished before the read began', () => {
    const history = [create('v1', 0, 1), del(undefined, true, 2, 3), get('v1', 4, 5)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('not-linearizable')
  })

  it('rejects two conditional deletes of one version that both won', () => {
    const history = [create('v1', 0, 1), del('v1', true, 2, 5), del('v1', true, 3, 6)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('not-linearizable')
  })

  it('accepts one winner and one PRECONDITION_FAILED among overlapping conditional deletes', () => {
    const history = [create('v1', 0, 1), del('v1', 'failed', 2, 5), del('v1', true, 3, 6)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('linearizable')
  })

  it('rejects a delete that claims a value existed on an absent key', () => {
    expect(checkLinearizability([del(undefined, true, 0, 1)], casRegisterModel).status).toBe(
      'not-linearizable',
    )
  })

  it('lets a pending delete explain a value that disappeared', () => {
    const pending: Op = { ...del(undefined, true, 2, 3), pending: true, response: Infinity }
    const history = [create('v1', 0, 1), pending, get(null, 4, 5)]
    expect(checkLinearizability(history, casRegisterModel).status).toBe('linearizable')
  })
})
