import { packageConfig } from '../../vitest.shared.js'

// One long test: build, pack, npm install, then the packed packages at work (see README).
// The source condition is for this test's own imports of workspace helpers (readme-blocks);
// the packed project's processes are plain Node and load only what npm installed there.
export default packageConfig({ test: { testTimeout: 1_800_000, hookTimeout: 900_000 } })
