import { defineConfig } from 'vitest/config'

// One long test: build, pack, npm install, then the packed packages at work (see README).
export default defineConfig({
  test: { include: ['test/**/*.test.ts'], testTimeout: 900_000, hookTimeout: 900_000 },
})
