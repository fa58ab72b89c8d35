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
    // The longest files first (seconds in the 2026-12-03 clean-clone run, four package suites of
    // the whole run at once), so that none starts last. wake-kill-cycles runs the counts
    // since (1,000 wakes, 20 SIGKILLs per backend: about 85 s alone).
    sequence: {
      sequencer: longestFirst([
        'test/run-crash.test.ts', // 285
        'test/daemon-queue-crash.test.ts', // 267
        'test/daemon-queue-crash-native.test.ts', // 37 on Redis and SQLite; ~110-136 with PostgreSQL
        'test/daemon-queue-crash-s3.test.ts', // 88
        'test/wake-kill-cycles.test.ts', // 54 at the old counts, ~85 at the issue's
        'test/run-integrity.test.ts', // 70
        'test/readme.test.ts', // 65
        'test/worker-lifecycle.test.ts', // 60
        'test/two-process.test.ts', // 51
        'test/readme-example.test.ts', // 51
        'test/daemon-queue.test.ts', // 50
        'test/run-two-process.test.ts', // 48
      ]),
    },
  },
})
