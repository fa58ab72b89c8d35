import { optionsTableProblems, packageReadme, runTsBlock } from '@agent-state/readme-blocks'
import { describe, expect, it } from 'vitest'
import { createS3Backend, s3OptionsSchema } from '../src/index.js'
import { s3Config } from './s3-config.js'

const readme = packageReadme(import.meta.url)
const { packageDir: PACKAGE_DIR, blocks, tsBlocks, typecheck } = readme

/** What each block needs changed to run against the suite's RGW instead of the README's. */
function substitutionsFor(index: number): Record<string, string> {
  const { endpoint, bucket } = s3Config()
  if (index === 0) {
    return {
      "'http://127.0.0.1:7480'": JSON.stringify(endpoint),
      "bucket: 'agent-state',": `bucket: ${JSON.stringify(bucket)},`,
    }
  }
  return { 'http://127.0.0.1:7480': endpoint, 's3://agent-state/': `s3://${bucket}/` }
}

describe('the S3 README', () => {
  it('has exactly the two ts blocks this test knows how to point at the test RGW', () => {
    expect(blocks.map((block) => `${block.language} ${block.flags.join(' ')}`.trim())).toEqual([
      'ts',
      'ts',
    ])
  })

  it.each(tsBlocks.map((block, index) => ({ index, line: block.line, code: block.code })))(
    'runs the ts block at line $line as written, against the real RGW',
    async ({ index, code }) => {
      const { credentials } = s3Config()
      const result = await runTsBlock(code, {
        cwd: PACKAGE_DIR,
        substitutions: substitutionsFor(index),
        // The README's blocks use the SDK's default credential chain.
        env: {
          AWS_ACCESS_KEY_ID: credentials.accessKeyId,
          AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        },
      })
      expect(result.stderr).toBe('')
      expect(result.exitCode).toBe(0)
      // The second block reads back what the first wrote, through the URL form.
      if (index === 1) expect(result.stdout).toBe('hello again\n')
    },
    60_000,
  )

  it('the first block left what it says in the bucket', async () => {
    const backend = createS3Backend({ ...s3Config(), prefix: 'prod/', namespace: 'planner' })
    try {
      const got = await backend.get('notes/today')
      expect(new TextDecoder().decode(got?.value)).toBe('hello again')
    } finally {
      await backend.close()
    }
  })

  it('type-checks every ts block under the package tsconfig', () => {
    expect(typecheck()).toEqual([])
  }, 120_000)

  it('lists exactly the schema options in the Options table', () => {
    // Names in order, `required` exactly where the schema requires (`bucket`), and the
    // `credentials` row naming the credentials' own fields.
    const rows = readme.optionsTable('## Options')
    expect(optionsTableProblems(rows, s3OptionsSchema)).toEqual([])
  })
})
