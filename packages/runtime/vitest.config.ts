import { packageConfig } from '../../vitest.shared.js'

export default packageConfig({
  test: {
    hookTimeout: 60_000,
    // One private redis-server and one Ceph RGW for the whole run; a failure to start fails the run.
    globalSetup: ['test/global-setup.ts'],
    // Two test files at a time (vitest's default on 2 cores is one): the slow files (the ledger's
    // and the queues' crash cycles) mostly wait on child processes and servers, so the CPU has
    // room for a second file, and CI's budget needs it (535 s one at a time). Set
    // AGENT_STATE_TEST_WORKERS=1 to run one file at a time (a heavily loaded machine).
    maxWorkers: Number(process.env.AGENT_STATE_TEST_WORKERS ?? 2),
  },
})
