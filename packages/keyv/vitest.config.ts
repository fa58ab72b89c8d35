import { packageConfig } from '../../vitest.shared.js'

export default packageConfig({
  test: {
    hookTimeout: 60_000,
    // One private redis-server and one Ceph RGW for the whole run; a failure to start fails the run.
    globalSetup: ['test/global-setup.ts'],
  },
})
