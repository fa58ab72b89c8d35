import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: { conditions: ['@agent-state/source'] },
  ssr: { resolve: { conditions: ['@agent-state/source'] } },
  // The global setup runs in vitest's own `__vitest__` environment: it needs the
  // source condition too, to import the workspace's test packages by name unbuilt.
  environments: { __vitest__: { resolve: { conditions: ['@agent-state/source'] } } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 120_000,
    // One private redis-server and one Ceph RGW for the whole run; a failure to start fails the run.
    globalSetup: ['test/global-setup.ts'],
    // Two test files at a time: the files share only the two servers (each test uses its own
    // temp directories, namespaces, key prefixes and tmux sockets), and the slow ones mostly
    // wait on child processes and servers. Set AGENT_STATE_TEST_WORKERS=1 for one file at a
    // time (a heavily loaded machine).
    maxWorkers: Number(process.env.AGENT_STATE_TEST_WORKERS ?? 2),
  },
})
