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
    // The longest files first (seconds in the 2026-12-03 clean-clone run, four package suites of
    // the whole run at once: copy 549, verify-servers 473, verify 277, ui-browser 117, demo 59,
    // readme 32, usage-errors 26), so that no long file starts last.
    sequence: {
      sequencer: longestFirst([
        'test/copy.test.ts',
        'test/verify-servers.test.ts',
        'test/verify.test.ts',
        'test/ui-browser.test.ts',
        'test/demo.test.ts',
        'test/readme.test.ts',
        'test/usage-errors.test.ts',
        'test/third-party-module.test.ts',
      ]),
    },
  },
})
