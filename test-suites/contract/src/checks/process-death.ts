import { ensure, ensureBytes, ensureEqual, fail } from '../assert.js'
import { type ContractCheck, check, notClaimed } from '../check.js'
import type { AckedWrites } from '../child-protocol.js'
import { makeCheckedValue } from '../child-values.js'

const KEY = 'died/acked'
const GONE = 'died/gone'
/** The acknowledged value: a self-checking value of 64 KiB, so a torn write shows too. */
const COUNTER = 7
const FILLER = 64 * 1024

/**
 * The proof of a `durable` claim across process death, for every backend
 * that claims it (with or without `multiProcess`): a child process opens the
 * backend, acknowledges a create, a compare-and-set overwrite and a delete,
 * and is killed with SIGKILL as soon as the parent has the acknowledgement;
 * then the parent opens its first instance and must read exactly the
 * acknowledged value at the acknowledged version, and the deleted key absent.
 *
 * The opens are sequential (the parent holds no instance of the namespace
 * while the child lives), so a backend that one process at a time may open
 * passes. A durable claim has no other proof in the suite: a backend that
 * claims `durable` must give the `process` option (a child module), and
 * without one the check fails (see `Harness.child`). The same-process
 * close-and-reopen checks (category durability, errors.ts) cannot tell a
 * store that lives in the process's memory from one that survives it.
 */
export const processDeathChecks: ContractCheck[] = [
  check(
    'durability',
    'a write acknowledged by a process killed with SIGKILL reads back at its version from another process',
    async (h) => {
      const child = await h.child()
      let acked: AckedWrites
      try {
        acked = await child.request<AckedWrites>({
          type: 'acked-writes',
          key: KEY,
          counter: COUNTER,
          filler: FILLER,
          goneKey: GONE,
        })
      } finally {
        // Killed on the reply (or on a failure): nothing the process does at exit may help.
        child.signal('SIGKILL')
        await child.exited
      }
      const fresh = await h.backend({ realClock: true })
      const got = await fresh.get(KEY)
      ensure(
        got !== null,
        `${KEY} is absent after its writer was killed: the acknowledged write (version ${acked.version}) was lost`,
      )
      ensureBytes(got.value, makeCheckedValue(KEY, COUNTER, FILLER), `${KEY} after the kill`)
      ensureEqual(got.meta.version, acked.version, `${KEY}'s version after the kill`)
      ensureEqual(await fresh.get(GONE), null, `${GONE}, deleted before the kill`)
      const listed = await fresh.list({ prefix: 'died/' })
      if (listed.entries.length !== 1 || listed.entries[0]?.key !== KEY) {
        fail(
          `listing after the kill: ${JSON.stringify(listed.entries.map((e) => e.key))}, expected ["${KEY}"]`,
        )
      }
    },
    {
      timeoutMs: 60_000,
      skip: (caps) => (caps.durable ? undefined : notClaimed('durable')),
    },
  ),
]
