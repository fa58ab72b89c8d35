#!/usr/bin/env node
// The whole test suite, as run by `pnpm test` and by CI (.ci/run):
// 1. installs the Debian packages the service-backed tests need (redis-server,
//    Ceph RGW, PostgreSQL 15, PgBouncer) when they are missing, in the background while step 2 runs; the
//    tests start and stop the servers themselves on free 127.0.0.1 ports;
// 2. lint (biome, zero warnings) and typecheck (one tsc program over every package);
// 3. every package's vitest suite, as many test files at once as AGENT_STATE_TEST_SLOTS allows
//    (see runSuites);
// 4. the failures again, named with their first error lines, so that the tail
//    of a long CI log says what broke;
// 5. one closing line "tests: N passed, N failed, N skipped" summed over packages.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const REPORT = '.vitest-report.json'
const packages = ['packages', 'apps', 'test-suites']
  .flatMap((dir) => {
    try {
      return execFileSync('ls', [join(root, dir)], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .map((name) => join(root, dir, name))
    } catch {
      return []
    }
  })
  .concat([join(root, 'benchmarks')])
  .filter((dir) => existsSync(join(dir, 'package.json')))

/**
 * CPU seconds (user + system) of this process's children that have ended and been reaped, each
 * with its own reaped descendants (a suite's vitest with its workers, child processes and test
 * servers), from Linux's /proc; `undefined` elsewhere.
 */
function reapedCpuSeconds() {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // cutime and cstime, fields 16 and 17 of proc(5), in clock ticks (100 per second on Linux).
    return (Number(fields[13]) + Number(fields[14])) / 100
  } catch {
    return undefined
  }
}

let cpuSampled = reapedCpuSeconds()
/**
 * The CPU used by the children reaped since the last call: read the moment a suite's process
 * ends, it is that suite's whole tree (plus any other child that ended in between, rare), so
 * the log says where the machine's CPU went, not only the wall time.
 */
function cpuSinceLastSample() {
  const now = reapedCpuSeconds()
  const used = now === undefined || cpuSampled === undefined ? undefined : now - cpuSampled
  cpuSampled = now
  return used === undefined ? '' : `, CPU ${used.toFixed(1)} s`
}

function step(title, command, args, options = {}) {
  console.log(`\n=== ${title}: ${command} ${args.join(' ')}`)
  const started = Date.now()
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options })
  console.log(
    `=== ${title}: exit ${result.status} in ${((Date.now() - started) / 1000).toFixed(1)} s${cpuSinceLastSample()}`,
  )
  return result.status === 0
}

/**
 * Installs the missing Debian packages in the background: `apt-get update` and `install` take
 * a minute or more on CI and need nothing that lint and typecheck do, so they overlap with
 * them. Its output goes to a private temp file and is printed as one block when the install
 * is awaited, so it never interleaves with lint's. Resolves whether everything needed is
 * installed.
 */
function ensureDebianPackages() {
  const needed = [
    ['/usr/bin/redis-server', 'redis-server'],
    ['/usr/bin/radosgw', 'radosgw'],
    ['/usr/bin/ceph-mon', 'ceph-mon'],
    ['/usr/bin/ceph-osd', 'ceph-osd'],
    ['/usr/bin/ceph', 'ceph-common'],
    // libfaketime: the Redis failover test runs a replica whose clock lags the primary's.
    ['/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1', 'libfaketime'],
    // Debian's PostgreSQL 15 keeps its server binaries off PATH.
    ['/usr/lib/postgresql/15/bin/postgres', 'postgresql'],
    ['/usr/sbin/pgbouncer', 'pgbouncer'],
    // The CLI's `ui` tests drive Debian's headless Chromium through playwright-core.
    ['/usr/bin/chromium', 'chromium'],
  ].filter(([binary]) => !existsSync(binary))
  if (needed.length === 0) return Promise.resolve(true)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  const pkgs = needed.map(([, pkg]) => pkg).join(' ')
  const script = `apt-get update -q && apt-get install -y -q --no-install-recommends ${pkgs}`
  const title = `apt-get (in the background): ${script}`
  const started = Date.now()
  // A file, not a pipe: lint and typecheck block this process's event loop (spawnSync), and a
  // full pipe would stall apt-get until they end.
  const log = join(mkdtempSync(join(tmpdir(), 'agent-state-apt-')), 'apt.log')
  const fd = openSync(log, 'w', 0o600)
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', script], { cwd: root, env, stdio: ['ignore', fd, fd] })
    closeSync(fd)
    let done = false
    const finish = (status, error) => {
      if (done) return
      done = true
      console.log(`\n=== ${title}`)
      process.stdout.write(readFileSync(log))
      rmSync(dirname(log), { recursive: true, force: true })
      if (error !== undefined) console.log(String(error))
      console.log(`=== apt-get: exit ${status} in ${((Date.now() - started) / 1000).toFixed(1)} s`)
      resolve(status === 0)
    }
    child.on('error', (error) => finish(null, error))
    child.on('close', (status) => finish(status))
  })
}

/**
 * Suites that run two test files at a time themselves (their vitest configs' `maxWorkers`): each
 * takes two of the run's slots.
 */
const WIDE = ['apps/cli', 'packages/runtime']

/**
 * The other suites run one file at a time (one slot each). Most of every suite's time is waiting
 * (on servers, fsyncs, lease expiries and child processes): run alone, the runtime's suite kept
 * 0.95 of two cores busy (544 s of CPU in 574 s), so the run fills `AGENT_STATE_TEST_SLOTS`
 * (default 4) slots at once, longest first. The order is the durations of the clean-clone run of
 * 2026-12-02 in four slots (seconds; the whole test step took 1198 s, 1.71 of 2 cores busy, close to
 * the 1165 s that perfect packing of those durations into four slots would give); a suite not listed
 * runs last, and the two wide suites (runtime 457 s, CLI 598 s) go first.
 */
const NARROW_ORDER = [
  'test-suites/contract', // 424
  'packages/backend-redis', // 385
  'packages/backend-postgres', // 367
  'test-suites/packed-install', // 329
  'packages/langgraph', // 198
  'packages/backend-s3', // 189
  'packages/backend-fs', // 174
  'packages/backend-sqlite', // 159
  'benchmarks', // 89
  'packages/core', // 68
  'packages/keyv', // 54
  'test-suites/services', // 39
  'test-suites/readme-blocks', // 29
  'packages/backend-memory', // 24
  'test-suites/import-loops', // 14
  'test-suites/child-bundles', // 8
]

/**
 * The suites' environment: this process's, without what `pnpm test` adds for its scripts
 * (`npm_config_*`, `npm_package_*`, `npm_lifecycle_*`, `PNPM_*`, ...). The tests stand for a
 * user's shell: a `npm_config_user_agent` naming pnpm would change what the CLI tells a user who
 * runs plain npm, and `npm_config_registry` could send the packed-install test's npm elsewhere.
 * `npm_config_nodedir` stays (native builds' headers).
 */
const SUITE_ENV = Object.fromEntries(
  Object.entries(process.env).filter(
    ([name]) => !/^(npm_|pnpm_)/i.test(name) || name.toLowerCase() === 'npm_config_nodedir',
  ),
)

/** One package's `vitest run`, its output streamed line by line under the package's name. */
function runSuite(dir) {
  const name = dir.slice(root.length + 1)
  const args = ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${REPORT}`]
  // The package's own vitest where it declares one, else the workspace root's (what
  // `pnpm run test` puts on PATH); never npx, which could download one.
  const own = join(dir, 'node_modules', '.bin', 'vitest')
  const vitest = existsSync(own) ? own : join(root, 'node_modules', '.bin', 'vitest')
  console.log(`\n=== ${name}: vitest ${args.join(' ')}`)
  const started = Date.now()
  return new Promise((resolve) => {
    const child = spawn(vitest, args, {
      cwd: dir,
      env: SUITE_ENV,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    for (const stream of [child.stdout, child.stderr]) {
      let pending = ''
      stream.setEncoding('utf8')
      stream.on('data', (chunk) => {
        const lines = (pending + chunk).split('\n')
        pending = lines.pop() ?? ''
        for (const line of lines) console.log(`${name}: ${line}`)
      })
      stream.on('end', () => {
        if (pending !== '') console.log(`${name}: ${pending}`)
      })
    }
    const finish = (status) => {
      console.log(
        `=== ${name}: exit ${status} in ${((Date.now() - started) / 1000).toFixed(1)} s${cpuSinceLastSample()}`,
      )
      resolve(status === 0)
    }
    child.on('error', (error) => {
      console.log(`${name}: ${error}`)
      finish(null)
    })
    child.on('close', finish)
  })
}

/**
 * Suites that need no Debian package (no server, no Debian binary): while apt-get is still
 * installing, they run first, shortest first, so the install's minutes are not idle.
 */
const WITHOUT_SERVICES = [
  'test-suites/child-bundles',
  'test-suites/import-loops',
  'test-suites/readme-blocks',
  'packages/core',
  'packages/backend-memory',
  'packages/backend-fs',
  'packages/backend-sqlite',
  'test-suites/contract',
]

/** The slots a suite takes: one per test file it runs at once. */
function slotsOf(dir) {
  return WIDE.includes(dir.slice(root.length + 1)) ? 2 : 1
}

/**
 * Runs `queue`'s suites in order, each as soon as `capacity` has room for its slots (a suite that
 * does not fit waits for one that ends; a smaller one behind it may start first), while `more()`
 * holds. Resolves when every started suite has ended; `ran` is called with each one's result.
 */
async function runPool(queue, capacity, more, ran) {
  let free = capacity
  const running = new Set()
  for (;;) {
    while (more()) {
      const at = queue.findIndex((dir) => Math.min(slotsOf(dir), capacity) <= free)
      if (at === -1) break
      const [dir] = queue.splice(at, 1)
      const slots = Math.min(slotsOf(dir), capacity)
      free -= slots
      const done = runSuite(dir).then((passed) => {
        free += slots
        running.delete(done)
        ran(dir, passed)
      })
      running.add(done)
    }
    if (running.size === 0) return
    await Promise.race(running)
  }
}

/**
 * Every package's suite, in `AGENT_STATE_TEST_SLOTS` slots (see WIDE). While the Debian install
 * (`debian`) runs, only the suites that need none of it start; then everything else, longest
 * first. Every suite runs whatever the others did. Resolves whether all passed (the install
 * included).
 */
async function runSuites(debian) {
  const capacity = Number(process.env.AGENT_STATE_TEST_SLOTS ?? '4')
  if (!Number.isInteger(capacity) || capacity < 1) {
    console.log(`AGENT_STATE_TEST_SLOTS must be a positive integer (got ${capacity})`)
    return false
  }
  const withTests = packages.filter(
    (dir) =>
      JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).scripts?.test !== undefined,
  )
  const relative = (dir) => dir.slice(root.length + 1)
  const rank = (dir) => {
    if (WIDE.includes(relative(dir))) return -1
    const at = NARROW_ORDER.indexOf(relative(dir))
    return at === -1 ? NARROW_ORDER.length : at
  }
  const queue = [...withTests].sort((a, b) => rank(a) - rank(b))
  const started = Date.now()
  const cpuAtStart = reapedCpuSeconds()
  let ok = true
  const ran = (_dir, passed) => {
    ok = passed && ok
  }
  let installed = false
  const install = debian.then((done) => {
    installed = true
    return done
  })
  // Let an install that is already over (a machine that has the packages) say so first.
  await new Promise((resolve) => setImmediate(resolve))
  if (!installed) {
    // Shortest first, so the install's minutes are not idle and little is left running after it.
    const early = queue
      .filter((dir) => WITHOUT_SERVICES.includes(relative(dir)))
      .sort((a, b) => rank(b) - rank(a))
    console.log(
      `\n=== test: while apt-get installs, up to ${early.length} suites that need none of it`,
    )
    const left = [...early]
    await runPool(left, capacity, () => !installed, ran)
    for (const dir of early) if (!left.includes(dir)) queue.splice(queue.indexOf(dir), 1)
  }
  ok = (await install) && ok
  console.log(`\n=== test: ${queue.length} suites in ${capacity} slots, longest first`)
  await runPool(queue, capacity, () => true, ran)
  const seconds = (Date.now() - started) / 1000
  console.log(`=== test: exit ${ok ? 0 : 1} in ${seconds.toFixed(1)} s`)
  const cpu = reapedCpuSeconds()
  if (cpu !== undefined && cpuAtStart !== undefined) {
    // Below the core count, the suites waited more than they computed: room for more at once.
    const busy = (cpu - cpuAtStart) / seconds
    console.log(
      `=== test: the suites used ${(cpu - cpuAtStart).toFixed(0)} s of CPU, ${busy.toFixed(2)} of ${availableParallelism()} cores busy on average`,
    )
  }
  return ok
}

for (const dir of packages) rmSync(join(dir, REPORT), { force: true })

const debian = ensureDebianPackages()
let ok = step('lint', 'npx', ['biome', 'check', '--error-on-warnings', '.'])
// One program over every workspace package (tsconfig.typecheck.json): each package's own
// `tsc` also checks the sources of the packages it imports (they resolve to source), so the
// per-package runs checked core 18 times; one program checks each file once (136 s -> 31 s).
// A package outside the program's folders would go unchecked: that fails the step, loudly.
const typecheckFolders = JSON.parse(
  readFileSync(join(root, 'tsconfig.typecheck.json'), 'utf8'),
).include
const unchecked = packages
  .map((dir) => dir.slice(root.length + 1))
  .filter(
    (dir) => !typecheckFolders.some((folder) => dir === folder || dir.startsWith(`${folder}/`)),
  )
if (unchecked.length > 0)
  console.log(`typecheck: not in tsconfig.typecheck.json: ${unchecked.join(', ')}`)
ok =
  unchecked.length === 0 && step('typecheck', 'npx', ['tsc', '-p', 'tsconfig.typecheck.json']) && ok
// The AWS SDK warns in every S3 test process that its 2027 releases need Node 22; the
// warning is about future SDK versions, not this run, and buries real output. The package
// itself never sets this: whether to silence it is each application's call.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'
// The suites that need the servers wait for the install (a failed one fails the run, never skips
// a suite).
ok = (await runSuites(debian)) && ok

let passed = 0
let failed = 0
let skipped = 0
const failures = []
const missing = []
for (const dir of packages) {
  const file = join(dir, REPORT)
  if (!existsSync(file)) {
    // A package with tests that left no report did not run (killed, or its vitest crashed): that is
    // a failure, never a silent pass of fewer packages.
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
    if (manifest.scripts?.test !== undefined) {
      missing.push(dir.slice(root.length + 1))
      console.log(`${dir.slice(root.length + 1)}: NO REPORT (its suite did not run to the end)`)
    }
    continue
  }
  const report = JSON.parse(readFileSync(file, 'utf8'))
  passed += report.numPassedTests
  failed += report.numFailedTests
  skipped += report.numPendingTests + report.numTodoTests
  for (const file of report.testResults ?? []) {
    const where = file.name.slice(root.length + 1)
    // A file that failed to load or whose hooks threw has no failed assertion to carry it.
    if (file.status === 'failed' && file.message)
      failures.push({ where, name: '(file)', text: file.message })
    for (const test of file.assertionResults ?? []) {
      if (test.status === 'failed') {
        failures.push({ where, name: test.fullName, text: (test.failureMessages ?? []).join('\n') })
      }
    }
  }
  console.log(
    `${dir.slice(root.length + 1)}: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${report.numPendingTests} skipped`,
  )
}
if (failures.length > 0) {
  console.log(`\n=== failures (${failures.length})`)
  for (const { where, name, text } of failures) {
    console.log(`\n✗ ${where} > ${name}`)
    console.log(text.split('\n').slice(0, 20).join('\n'))
  }
  console.log('')
}
failed += missing.length // each package that did not report counts as a failure
if (!ok && failed === 0) failed = 1 // lint, typecheck or a crashed suite: count it as a failure
console.log(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped`)
process.exit(ok && failed === 0 && missing.length === 0 ? 0 : 1)
