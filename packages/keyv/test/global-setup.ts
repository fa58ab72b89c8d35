import { startBackendServers } from '@agent-state/backend-targets'
import type { TestProject } from 'vitest/node'

/** One private redis-server and one Ceph RGW for the run (see @agent-state/backend-targets). */
export default function setup(project: TestProject): Promise<() => Promise<void>> {
  return startBackendServers(project, { bucket: 'agent-state-keyv' })
}
