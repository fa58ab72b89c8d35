import { packageConfig } from '../../vitest.shared.js'

export default packageConfig({ test: { testTimeout: 60_000 } })
