// Sets the template's ranges of the workspace's packages (examples/third-party-backend's
// `@agent-state/*` dependencies) to `^<version>` of each package as the workspace has it now:
// run after `changeset version`, so the template installs the release it documents (a 0.x
// caret range does not reach the next minor). The release rehearsal (test-suites/packed-install)
// runs it on its scratch copy the same way.
//
//   node scripts/sync-template-versions.mjs [workspace-root] [template-dir]
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

const root = resolve(process.argv[2] ?? join(import.meta.dirname, '..'))
const template = resolve(process.argv[3] ?? join(root, 'examples', 'third-party-backend'))

const versions = new Map()
for (const group of ['packages', 'apps', 'test-suites']) {
  const dir = join(root, group)
  if (!existsSync(dir)) continue
  for (const name of readdirSync(dir)) {
    const manifest = join(dir, name, 'package.json')
    if (!existsSync(manifest)) continue
    const pkg = JSON.parse(readFileSync(manifest, 'utf8'))
    if (pkg.private !== true) versions.set(pkg.name, pkg.version)
  }
}

const path = join(template, 'package.json')
const pkg = JSON.parse(readFileSync(path, 'utf8'))
const changed = []
for (const field of ['dependencies', 'devDependencies', 'peerDependencies']) {
  for (const name of Object.keys(pkg[field] ?? {})) {
    if (!name.startsWith('@agent-state/')) continue
    const version = versions.get(name)
    if (version === undefined) throw new Error(`${name} is not a publishable workspace package`)
    if (pkg[field][name] !== `^${version}`) changed.push(`${name} ^${version}`)
    pkg[field][name] = `^${version}`
  }
}
writeFileSync(path, `${JSON.stringify(pkg, null, 2)}\n`)
console.log(changed.length === 0 ? 'template ranges unchanged' : `template: ${changed.join(', ')}`)
