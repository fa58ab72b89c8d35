import { packageConfig } from '../vitest.shared.js'

export default packageConfig({ test: { testTimeout: 300_000, hookTimeout: 300_000 } })
