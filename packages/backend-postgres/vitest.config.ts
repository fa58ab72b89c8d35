import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: { conditions: ['@agent-state/source'] },
  ssr: { resolve: { conditions: ['@agent-state/source'] } },
  test: { include: ['test/**/*.test.ts'], testTimeout: 30_000 },
})
