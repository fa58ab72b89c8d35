import { longestFirst, packageConfig } from '../../vitest.shared.js'

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
    // The longest files first (seconds in the 2026-12-02 clean-clone run, four files of the whole
    // run at once), so that none starts last.
    sequence: {
      sequencer: longestFirst([
        'test/run-crash.test.ts', // 207
        'test/daemon-queue-crash.test.ts', // 130
        'test/daemon-queue-crash-s3.test.ts', // 86
        'test/daemon-queue-crash-native.test.ts', // new (26 s alone at load 6, 102 s at load 11)
        'test/daemon-queue.test.ts', // 42 before both paths ran (58 s at load 11 after)
        'test/worker-lifecycle.test.ts', // 52
        'test/run-two-process.test.ts', // 33
        'test/two-process.test.ts', // 24
        'test/run-integrity.test.ts', // 22
        'test/readme.test.ts', // 21
        'test/run.test.ts', // 20
      ]),
    },
  },
})
