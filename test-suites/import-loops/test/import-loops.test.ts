import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { describeLoops, findImportLoops, repositoryModules } from '../src/index.js'

const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')

describe('the repository', () => {
  it('has no import loop, type-only imports included', async () => {
    const files = repositoryModules(repositoryRoot)
    // A listing that found nothing would pass vacuously: the repository has hundreds of modules.
    expect(files.length).toBeGreaterThan(300)
    expect(files).toContain('packages/runtime/src/index.ts')
    const loops = await findImportLoops({ root: repositoryRoot, files })
    expect(describeLoops(loops)).toBe('')
  })
})

/** A throwaway project with the repository's module settings, so `./x.js` resolves to `./x.ts`. */
function fixture(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-import-loops-'))
  created.push(dir)
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext' } }),
  )
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }))
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text)
  return dir
}

const created: string[] = []
afterEach(() => {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** Each loop as its modules in sorted order, so the assertion does not depend on where dpdm starts. */
const normalized = (loops: readonly (readonly string[])[]): string[][] =>
  loops.map((loop) => [...loop].sort())

describe('the check, fed small fixtures', () => {
  it('finds a two-module loop of value imports', async () => {
    const root = fixture({
      'a.ts': "import { b } from './b.js'\nexport const a = (): number => b() + 1\n",
      'b.ts': "import { a } from './a.js'\nexport const b = (): number => (a.length > 0 ? 1 : 0)\n",
    })
    const loops = await findImportLoops({ root, files: ['a.ts', 'b.ts'] })
    expect(normalized(loops)).toEqual([['a.ts', 'b.ts']])
    expect(describeLoops(loops)).toMatch(/^(a\.ts -> b\.ts -> a\.ts|b\.ts -> a\.ts -> b\.ts)$/)
  })

  it('finds a loop closed by a type-only import or re-export', async () => {
    const root = fixture({
      'queue.ts': "import { Delivery } from './delivery.js'\nexport class Queue { d?: Delivery }\n",
      'delivery.ts':
        "import type { Queue } from './queue.js'\nexport class Delivery { q?: Queue }\n",
      'x.ts': "export type { Z } from './z.js'\nexport type X = 1\n",
      'y.ts': "import type { X } from './x.js'\nexport type Y = X\n",
      'z.ts': "import type { Y } from './y.js'\nexport type Z = Y\n",
    })
    const loops = await findImportLoops({ root, files: ['queue.ts', 'x.ts'] })
    expect(normalized(loops).sort()).toEqual([
      ['delivery.ts', 'queue.ts'],
      ['x.ts', 'y.ts', 'z.ts'],
    ])
  })

  it('finds nothing where the imports form no loop', async () => {
    const root = fixture({
      'shared.ts': 'export const shared = 1\n',
      'a.ts': "import { shared } from './shared.js'\nexport const a = shared\n",
      'b.ts':
        "import type { a } from './a.js'\nimport { shared } from './shared.js'\nexport const b: typeof a = shared\n",
    })
    expect(await findImportLoops({ root, files: ['a.ts', 'b.ts', 'shared.ts'] })).toEqual([])
  })
})
