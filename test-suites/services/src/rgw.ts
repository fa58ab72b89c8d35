import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { ensureDebianPackages } from './debian-packages.js'
import { freePort } from './free-port.js'
import { reportCpu } from './process-cpu.js'
import { killOnExit } from './server-processes.js'
import { startWatchdog, stopWatchdog } from './watchdog.js'

/**
 * A throwaway single-node Ceph RADOS Gateway (S3) for tests: one ceph-mon, one
 * memstore ceph-osd (data in RAM) and radosgw (beast), all on 127.0.0.1 and on
 * ports the kernel reported free, in a private temp directory, with `auth none`
 * between the daemons and one S3 user with random credentials.
 *
 * Facts it relies on (Ceph 16.2 "pacific" from Debian 12): a mon must be named
 * in the monmap; radosgw needs `ms mon client mode = crc` and `keyring =
 * /dev/null` under auth none; `paxos propose interval = 0.05` brings start-up
 * from ~13 s to ~1.5 s; beast needs `tcp_nodelay=1` or every response with a
 * body stalls 40 ms; `rgw enable lc threads = false` lets radosgw stop fast.
 */

/** Options of {@link startRgw}. */
export interface RgwOptions {
  /** Upper bound for the whole start-up, in milliseconds. Default 120 000. */
  readonly timeoutMs?: number
  /** Largest amount of data the in-RAM OSD holds, in bytes. Default 1 GiB. */
  readonly memstoreBytes?: number
  /** Grace after SIGTERM before SIGKILL when stopping, per daemon, in ms. Default 2000. */
  readonly stopGraceMs?: number
}

/** A running gateway; pass its fields to an S3 client. */
export interface RgwServer {
  /** `http://127.0.0.1:PORT` */
  readonly endpoint: string
  readonly region: string
  readonly accessKeyId: string
  readonly secretAccessKey: string
  /** RGW serves path-style requests (no bucket DNS names on loopback). */
  readonly forcePathStyle: true
  /** The temp directory holding config, logs and mon data (wiped by `stop`). */
  readonly dir: string
  /** Stops radosgw, then the OSD, then the mon (SIGKILL after a grace), and wipes `dir`. Idempotent. */
  stop(): Promise<void>
}

const BINARIES = [
  '/usr/bin/radosgw',
  '/usr/bin/radosgw-admin',
  '/usr/bin/ceph-mon',
  '/usr/bin/ceph-osd',
  '/usr/bin/ceph',
  '/usr/bin/monmaptool',
]
const PACKAGES = ['radosgw', 'ceph-mon', 'ceph-osd', 'ceph-common']
const REGION = 'us-east-1'

function run(file: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, killSignal: 'SIGKILL' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed: ${error.message} ${stderr}`))
      else resolve(stdout)
    })
  })
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

function cephConf(dir: string, fsid: string, monPort: number, rgwPort: number, bytes: number) {
  return `[global]
fsid = ${fsid}
mon host = v2:127.0.0.1:${monPort}
public addr = 127.0.0.1
cluster addr = 127.0.0.1
public network = 127.0.0.0/8
ms bind ipv4 = true
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
run dir = ${dir}/run
pid file = ${dir}/run/$name.pid
admin socket = ${dir}/run/$name.asok
log file = ${dir}/log/$name.log
log to stderr = false
err to stderr = false
client mount timeout = 20
rados mon op timeout = 30
osd crush chooseleaf type = 0
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
mon data avail crit = 0
mon data avail warn = 0
mon warn on insecure global id reclaim allowed = false
# No per-request logging or op history: at Ceph's default levels they cost radosgw and the OSD a
# fifth of their CPU (radosgw 10.3 -> 8.1 s, the OSD 4.3 -> 3.4 s for start-up and 9,000 requests
# at 16 at a time; medians of two runs each), and the test runs share two cores with them.
debug rgw = 0/0
debug ms = 0/0
debug osd = 0/0
debug objecter = 0/0
debug rados = 0/0
debug monc = 0/0
debug auth = 0/0
debug memstore = 0/0
debug objclass = 0/0
debug optracker = 0/0
rgw enable usage log = false
rgw enable ops log = false
osd enable op tracker = false
[mon.a]
mon data = ${dir}/mon
paxos propose interval = 0.05
[osd.0]
osd data = ${dir}/osd
osd objectstore = memstore
memstore device bytes = ${bytes}
osd class load list = *
osd class default list = *
[client.rgw.a]
ms mon client mode = crc
keyring = /dev/null
rgw data = ${dir}/rgw
rgw frontends = beast endpoint=127.0.0.1:${rgwPort} tcp_nodelay=1
rgw enable lc threads = false
`
}

/** Signs a GET of `/` (ListBuckets) with SigV4 and reports the HTTP status. */
async function signedStatus(endpoint: string, accessKeyId: string, secret: string) {
  const host = new URL(endpoint).host
  const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, '')
  const day = amzDate.slice(0, 8)
  const payloadHash = createHash('sha256').update('').digest('hex')
  const canonical = [
    'GET',
    '/',
    '',
    `host:${host}`,
    `x-amz-content-sha256:${payloadHash}`,
    `x-amz-date:${amzDate}`,
    '',
    'host;x-amz-content-sha256;x-amz-date',
    payloadHash,
  ].join('\n')
  const scope = `${day}/${REGION}/s3/aws4_request`
  const toSign = [
    'AWS4-HMAC-SHA256',
    amzDate,
    scope,
    createHash('sha256').update(canonical).digest('hex'),
  ].join('\n')
  let key: Buffer = createHmac('sha256', `AWS4${secret}`).update(day).digest()
  for (const part of [REGION, 's3', 'aws4_request']) {
    key = createHmac('sha256', key).update(part).digest()
  }
  const signature = createHmac('sha256', key).update(toSign).digest('hex')
  const response = await fetch(`${endpoint}/`, {
    headers: {
      'x-amz-date': amzDate,
      'x-amz-content-sha256': payloadHash,
      authorization: `AWS4-HMAC-SHA256 Credential=${accessKeyId}/${scope}, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${signature}`,
    },
    signal: AbortSignal.timeout(5000),
  })
  await response.arrayBuffer()
  return response.status
}

async function waitFor(
  what: string,
  deadline: number,
  check: () => Promise<boolean>,
  alive: () => void,
): Promise<void> {
  for (;;) {
    alive()
    try {
      if (await check()) return
    } catch {
      // not ready yet
    }
    if (Date.now() > deadline) throw new Error(`RGW start-up: ${what} not ready in time`)
    await sleep(100)
  }
}

async function stopDaemon(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}

function spawnDaemon(dir: string, file: string, args: string[]): ChildProcess {
  // -f keeps each daemon in the foreground as our own child, so we know its PID.
  const child = spawn(file, ['-f', '-c', join(dir, 'ceph.conf'), ...args], {
    stdio: 'ignore',
    env: { ...process.env, CEPH_CONF: join(dir, 'ceph.conf') },
  })
  killOnExit(child)
  return child
}

/**
 * Starts a private Ceph RGW and resolves once a SigV4-signed request with the
 * returned credentials succeeds. Installs the Debian packages when missing.
 * Every call starts its own cluster; always call `stop()` (the daemons are
 * also killed when this process exits, or by a watchdog if it is killed).
 */
export async function startRgw(options: RgwOptions = {}): Promise<RgwServer> {
  ensureDebianPackages(BINARIES, PACKAGES)
  // A port the kernel reported free can be taken before a daemon binds it: start afresh.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options)
    } catch (error) {
      if (attempt >= 3) throw error
    }
  }
}

async function startOnce(options: RgwOptions): Promise<RgwServer> {
  const timeoutMs = options.timeoutMs ?? 120_000
  const graceMs = options.stopGraceMs ?? 2000
  const deadline = Date.now() + timeoutMs
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-rgw-'))
  const conf = join(dir, 'ceph.conf')
  const daemons: ChildProcess[] = []
  let watchdog: ChildProcess | undefined
  let stopped = false
  const startedAt = Date.now()

  const stop = async (): Promise<void> => {
    if (stopped) return
    stopped = true
    reportCpu(
      'Ceph RGW',
      daemons.map((child) => ({ name: basename(child.spawnfile), pid: child.pid })),
      startedAt,
    )
    // radosgw first, then the OSD (it waits 5 s for a missing mon), then the mon.
    for (const child of [...daemons].reverse()) await stopDaemon(child, graceMs)
    stopWatchdog(watchdog)
    rmSync(dir, { recursive: true, force: true })
  }

  const alive = (): void => {
    for (const child of daemons) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`RGW start-up: ${child.spawnfile} exited early (logs in ${dir}/log)`)
      }
    }
  }
  const ceph = (args: string[]) => run('/usr/bin/ceph', ['-c', conf, ...args], 60_000)

  try {
    for (const sub of ['log', 'mon', 'osd', 'run', 'rgw']) {
      mkdirSync(join(dir, sub), { mode: 0o700 })
    }
    const fsid = randomUUID()
    const monPort = await freePort()
    const rgwPort = await freePort()
    const endpoint = `http://127.0.0.1:${rgwPort}`
    writeFileSync(conf, cephConf(dir, fsid, monPort, rgwPort, options.memstoreBytes ?? 1024 ** 3), {
      mode: 0o600,
    })

    await run(
      '/usr/bin/monmaptool',
      ['--create', '--fsid', fsid, '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, join(dir, 'monmap')],
      30_000,
    )
    await run(
      '/usr/bin/ceph-mon',
      ['-c', conf, '-i', 'a', '--mkfs', '--monmap', join(dir, 'monmap'), '--keyring', '/dev/null'],
      60_000,
    )
    daemons.push(spawnDaemon(dir, '/usr/bin/ceph-mon', ['-i', 'a']))
    watchdog = startWatchdog(dir, daemons)

    const osdId = (await ceph(['osd', 'create'])).trim()
    if (osdId !== '0') throw new Error(`RGW start-up: unexpected OSD id ${osdId}`)
    await ceph(['osd', 'crush', 'add', 'osd.0', '1', 'root=default'])
    await run('/usr/bin/ceph-osd', ['-c', conf, '-i', '0', '--mkfs'], 60_000)
    daemons.push(spawnDaemon(dir, '/usr/bin/ceph-osd', ['-i', '0']))
    watchdog.kill('SIGKILL')
    watchdog = startWatchdog(dir, daemons)
    await waitFor(
      'osd.0',
      deadline,
      async () => /^osd\.0 up/m.test(await ceph(['osd', 'dump'])),
      alive,
    )

    daemons.push(spawnDaemon(dir, '/usr/bin/radosgw', ['-n', 'client.rgw.a']))
    watchdog.kill('SIGKILL')
    watchdog = startWatchdog(dir, daemons)
    await waitFor(
      'radosgw',
      deadline,
      async () => {
        const response = await fetch(`${endpoint}/`, { signal: AbortSignal.timeout(2000) })
        await response.arrayBuffer()
        return response.status === 200
      },
      alive,
    )

    const accessKeyId = `AS${randomBytes(9).toString('hex').toUpperCase()}`
    const secretAccessKey = randomBytes(30).toString('base64url')
    await run(
      '/usr/bin/radosgw-admin',
      [
        '-c',
        conf,
        'user',
        'create',
        '--uid=agent-state-test',
        '--display-name=agent-state tests',
        `--access-key=${accessKeyId}`,
        `--secret-key=${secretAccessKey}`,
      ],
      60_000,
    )
    await waitFor(
      'signed request',
      deadline,
      async () => (await signedStatus(endpoint, accessKeyId, secretAccessKey)) === 200,
      alive,
    )
    return {
      endpoint,
      region: REGION,
      accessKeyId,
      secretAccessKey,
      forcePathStyle: true,
      dir,
      stop,
    }
  } catch (error) {
    await stop()
    throw error
  }
}
