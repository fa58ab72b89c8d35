import { packageConfig } from '../../vitest.shared.js'

export default packageConfig({
  test: {
    // Every write is two round trips and a commit that waits for its WAL flush (~10 ms on the
    // loaded test disk), so the contract's racing checks cost what S3's do (its config: 60 s).
    // Measured: "N by M compare-and-set increments" 4.5 s alone, 30.2 s at load ~50 beside the
    // runtime suite (over the 30 s default of the other local backends).
    testTimeout: 60_000,
  },
})
