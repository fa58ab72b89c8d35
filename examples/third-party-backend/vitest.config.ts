import { defineConfig } from 'vitest/config'

// Nothing special: the published packages resolve like any other. The suite's checks write
// real files, so give them time on a slow disk.
export default defineConfig({
  test: { include: ['test/**/*.test.ts'], testTimeout: 60_000 },
})
