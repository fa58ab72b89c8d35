import { longestFirst, packageConfig } from '../../vitest.shared.js'

export default packageConfig({
  test: {
    testTimeout: 300_000,
    hookTimeout: 120_000,
    // One private redis-server and one Ceph RGW for the whole run; a failure to start fails the run.
    globalSetup: ['test/global-setup.ts'],
    // Two test files at a time: the files share only the two servers (each test uses its own
    // temp directories, namespaces, key prefixes and tmux sockets), and the slow ones mostly
    // wait on child processes and servers. Set AGENT_STATE_TEST_WORKERS=1 for one file at a
    // time (a heavily loaded machine).
    maxWorkers: Number(process.env.AGENT_STATE_TEST_WORKERS ?? 2),
    // The longest files first (seconds in the 2026-12-02 clean-clone run, four files of the whole
    // run at once: copy 360, verify-servers 357, verify 195, ui-browser 46, demo 43, usage-errors
    // 31), so that no long file starts last.
    sequence: {
      sequencer: longestFirst([
        'test/copy.test.ts',
        'test/verify-servers.test.ts',
        'test/verify.test.ts',
        'test/demo.test.ts',
        'test/usage-errors.test.ts',
        'test/readme.test.ts',
        'test/third-party-module.test.ts',
      ]),
    },
  },
})
