import type { TestProject } from 'vitest/node'
// Relative import: global setup files resolve outside the test environments' export conditions.
import { startBackendServers } from '../../../test-suites/backend-targets/src/global-setup.js'

/** One private redis-server and one Ceph RGW for the run (see @agent-state/backend-targets). */
export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return startBackendServers(project, { bucket: 'agent-state-langgraph' })
}
