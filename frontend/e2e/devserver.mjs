// DEV FIXTURE ONLY: not part of labpool. A tiny stand-in for `labpool web`
// that serves dist/ plus the /api/v1 routes and Server-Sent Events with
// synthetic, changing data of three machines (lab1: this machine, 2 GPUs;
// lab2: "no NVIDIA GPU found"; lab3: 1 GPU, goes offline after a while),
// so the dashboard and e2e/dashboard.mjs can be exercised without a daemon;
// plus in-memory jobs (e2e/devjobs.mjs) for the jobs UI and e2e/jobs.mjs,
// and an in-memory pool with roles and invites (e2e/devpool.mjs) for the
// Members view and e2e/members.mjs.
//
//   node e2e/devserver.mjs [--port 8787] [--offline-after 25] [--down-after 0]
//                          [--no-events] [--hostile] [--no-jobs]
//                          [--role owner|admin|member|viewer] [--shown-role ROLE]
//                          [--self-name NAME]
//
// --role R: start in a pool where this machine is R (with an owner, an admin
//   or owner, members, a viewer, a removed member and invites in every state);
//   without it, start outside a pool (Create makes this machine the owner).
// --shown-role R: report R to the UI while enforcing --role (a stale view,
//   to see a refusal's message in the UI).
// --self-name NAME: this machine (lab1) is named NAME (a long name, to see
//   that it is shown whole beside its "this machine" badge).
// --no-jobs: start without the sample jobs (launching still works).
// --down-after N: the API answers 503 after N seconds (daemon unreachable).
// --no-events: no SSE events, so the UI must fall back to polling.
// --hostile: peer strings carry HTML, which must show as text.
import { createReadStream, existsSync, statSync } from 'node:fs'
import { createServer } from 'node:http'
import { extname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createJobs, tunnelPage } from './devjobs.mjs'
import { createPool } from './devpool.mjs'

const args = process.argv.slice(2)
const opt = (name, def) => {
  const i = args.indexOf(name)
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : def
}
const flag = (name) => args.includes(name)
const port = Number(opt('--port', '8787'))
const offlineAfter = Number(opt('--offline-after', '25'))
const downAfter = Number(opt('--down-after', '0'))
const noEvents = flag('--no-events')
const hostile = flag('--hostile')
const noJobs = flag('--no-jobs')
const role = opt('--role', '')
const shownRole = opt('--shown-role', '')
const selfName = opt('--self-name', 'lab1')
for (const r of [role, shownRole]) {
  if (r && !['owner', 'admin', 'member', 'viewer'].includes(r)) throw new Error(`--role ${r}: want owner, admin, member or viewer`)
}
const dist = fileURLToPath(new URL('../dist/', import.meta.url))
const started = Date.now()
const GiB = 1024 ** 3

const gpu = (node, name, index, model, memGiB, limit) => ({
  node, node_name: name, index, uuid: `GPU-${node.slice(0, 8)}-${index}`, name: model,
  util_percent: 0, mem_util_percent: 0, mem_used_bytes: 0, mem_total_bytes: memGiB * GiB,
  temp_c: 40, power_w: 60, power_limit_w: limit, sm_clock_mhz: 1410, mem_clock_mhz: 1593,
  fan_percent: -1, processes: 0,
})

const machines = [
  {
    id: 'K7Q2MX4PAB3CDEF5GHIJ6KLMN7OPQR2STUV3WXYZ4ABCDE5FGHI', short_id: 'K7Q2-MX4P', name: selfName, self: true,
    info: { hostname: selfName, os: 'Ubuntu 24.04', kernel: '6.8.0-45-generic', cpu_model: 'AMD EPYC 7313 16-Core', cores: 32, mem_total_bytes: 256 * GiB, version: '0.1.0', started_at: new Date(started - 86400e3).toISOString() },
    memTotal: 256 * GiB,
    disks: [{ mount: '/', used_bytes: 310 * GiB, total_bytes: 900 * GiB }, { mount: '/data', used_bytes: 5.1 * 1024 * GiB, total_bytes: 7.3 * 1024 * GiB }],
    gpus: ['NVIDIA A100-SXM4-80GB', 'NVIDIA A100-SXM4-80GB'], gpuMem: 80, gpuLimit: 400,
  },
  {
    id: 'B9TXW2LM5QRSTUV6WXYZ7ABCD2EFGH3IJKL4MNOP5QRST6UVWX', short_id: 'B9TX-W2LM', name: 'lab2', self: false,
    info: { hostname: 'lab2', os: hostile ? '<b>Debian</b> 12' : 'Debian 12', kernel: '6.1.0-26-amd64', cpu_model: hostile ? '<img src=x onerror=alert(1)>' : 'Intel Xeon W-2245', cores: 16, mem_total_bytes: 64 * GiB, version: '0.1.0', started_at: new Date(started - 3600e3).toISOString() },
    memTotal: 64 * GiB,
    disks: [{ mount: '/', used_bytes: 120 * GiB, total_bytes: 480 * GiB }],
    gpus: [], gpuError: hostile ? '<script>alert(1)</script> no NVIDIA GPU found' : 'no NVIDIA GPU found',
  },
  {
    id: 'R4NDQ8ZPC2DEFG3HIJK4LMNO5PQRS6TUVW7XYZA2BCDE3FGHIJ', short_id: 'R4ND-Q8ZP', name: 'lab3', self: false,
    info: { hostname: 'lab3', os: 'Ubuntu 22.04', kernel: '5.15.0-122-generic', cpu_model: 'AMD Ryzen 9 7950X', cores: 32, mem_total_bytes: 128 * GiB, version: '0.1.0', started_at: new Date(started - 7200e3).toISOString() },
    memTotal: 128 * GiB,
    disks: [{ mount: '/', used_bytes: 700 * GiB, total_bytes: 1800 * GiB }, { mount: '/scratch', used_bytes: 1.6 * 1024 * GiB, total_bytes: 1.8 * 1024 * GiB }, { mount: '/home', used_bytes: 80 * GiB, total_bytes: 200 * GiB }, { mount: '/backup', used_bytes: 2 * GiB, total_bytes: 4000 * GiB }],
    gpus: ['NVIDIA GeForce RTX 4090'], gpuMem: 24, gpuLimit: 450, offlineAfter,
  },
]

// Deterministic-ish signals: a slow wave per machine plus noise.
const wave = (t, period, phase) => 0.5 + 0.5 * Math.sin((2 * Math.PI * t) / period + phase)
const noise = (a) => (Math.random() - 0.5) * a
const pct = (v) => Math.min(100, Math.max(0, v))

function online(m, now) {
  return !(m.offlineAfter > 0 && (now - started) / 1000 >= m.offlineAfter)
}

function sampleAt(m, i, tMs) {
  const t = tMs / 1000
  const cpu = pct(15 + 60 * wave(t, 90 + i * 40, i) + noise(8))
  const gu = m.gpus.map((_, g) => pct(30 + 65 * wave(t, 60 + g * 25, i + g * 2) + noise(6)))
  const gm = m.gpus.map((_, g) => pct(40 + 40 * wave(t, 200, g) + noise(2)))
  return { cpu, mem: pct(25 + 30 * wave(t, 300, i) + noise(1)), gu, gm }
}

const state = machines.map((m, i) => ({ m, i, last: null, lastSeen: started, samples: [] }))

function step(now) {
  for (const s of state) {
    if (!online(s.m, now)) continue
    const v = sampleAt(s.m, s.i, now)
    s.last = v
    s.lastSeen = now
    s.samples.push({ node: s.m.id, time: new Date(now).toISOString(), cpu_percent: v.cpu, mem_percent: v.mem, gpu_util: v.gu, gpu_mem_pct: v.gm })
    while (s.samples.length && Date.parse(s.samples[0].time) < now - 600e3) s.samples.shift()
  }
}

// Prefill 5 minutes of history.
for (let t = started - 300e3; t < started; t += 1000) {
  for (const s of state) {
    const v = sampleAt(s.m, s.i, t)
    s.samples.push({ node: s.m.id, time: new Date(t).toISOString(), cpu_percent: v.cpu, mem_percent: v.mem, gpu_util: v.gu, gpu_mem_pct: v.gm })
  }
}
step(Date.now())

function nodeView(s, now) {
  const { m, last: v } = s
  const on = online(m, now)
  return {
    id: m.id, short_id: m.short_id, name: m.name, self: m.self, online: on, stale: !on,
    addresses: [`10.203.0.${s.i + 1}:7443`], last_seen: new Date(s.lastSeen).toISOString(), info: m.info,
    host: {
      cpu_percent: v.cpu, load1: (v.cpu / 100) * m.info.cores * 0.6, mem_used_bytes: Math.round((v.mem / 100) * m.memTotal), mem_total_bytes: m.memTotal,
      disks: m.disks, net_rx_bps: 2e6 * wave(now / 1000, 30, s.i) + 1e4, net_tx_bps: 4e5 * wave(now / 1000, 45, s.i) + 1e3,
    },
    gpus: m.gpus.length
      ? m.gpus.map((model, g) => {
          const x = gpu(m.id, m.name, g, model, m.gpuMem, m.gpuLimit)
          x.util_percent = Math.round(v.gu[g])
          x.mem_util_percent = Math.round(v.gu[g] * 0.7)
          x.mem_used_bytes = Math.round((v.gm[g] / 100) * x.mem_total_bytes)
          x.temp_c = Math.round(38 + v.gu[g] * 0.45)
          x.power_w = Math.round(70 + (m.gpuLimit - 90) * (v.gu[g] / 100))
          x.processes = jobs?.heldIndexes(m.id).has(g) ? 1 : 0
          return x
        })
      : null,
    gpu_error: m.gpuError,
    containers: true,
  }
}

const pool = createPool({ machines, online: (id) => online(machines.find((m) => m.id === id), Date.now()), role, shownRole })
const self = { id: machines[0].id, short_id: machines[0].short_id, name: selfName, version: '0.1.0-dev', api_version: 1, data_dir: '(dev fixture)', listen: '127.0.0.1:' + port }

const clients = new Set()
const emit = (name, data) => {
  if (noEvents || down()) return
  for (const c of clients) c.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`)
}
let jobs = null
jobs = createJobs({ nodes: () => state.map((s) => nodeView(s, Date.now())), self, emit, seed: !noJobs, port, role: pool.role })

const json = (res, status, v) => {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' })
  res.end(v === undefined ? '' : JSON.stringify(v))
}
const fail = (res, status, code, message) => json(res, status, { code, message })
const down = () => downAfter > 0 && (Date.now() - started) / 1000 >= downAfter

setInterval(() => {
  const now = Date.now()
  step(now)
  if (noEvents || down()) return
  const frames = [`event: pool:nodes\ndata: ${JSON.stringify(state.map((s) => nodeView(s, now)))}\n\n`]
  for (const s of state) if (online(s.m, now)) frames.push(`event: node:sample\ndata: ${JSON.stringify(s.samples.at(-1))}\n\n`)
  for (const c of clients) c.write(frames.join(''))
}, 1000)

async function body(req) {
  let b = ''
  for await (const chunk of req) b += chunk
  return b
}

// answer replies with what fn returns (204 when nothing), or with the
// refusal it throws (an error with a status), or 400 for a bad request.
async function answer(res, fn) {
  try {
    const v = await fn()
    if (v === undefined) {
      res.writeHead(204)
      res.end()
    } else json(res, 200, v)
  } catch (err) {
    if (err.status) fail(res, err.status, err.code, err.message)
    else fail(res, 400, 'invalid', `decode request: ${err.message}`)
  }
}

async function api(req, res, url) {
  if (down()) return fail(res, 503, 'unavailable', 'daemon stopped')
  const p = url.pathname.slice('/api/v1'.length)
  const now = Date.now()
  if (req.method === 'GET' && p === '/self') return json(res, 200, self)
  if (req.method === 'GET' && p === '/nodes') return json(res, 200, state.map((s) => nodeView(s, now)))
  if (req.method === 'GET' && p === '/gpus') return json(res, 200, state.flatMap((s) => nodeView(s, now).gpus ?? []))
  if (req.method === 'GET' && p === '/history') {
    const s = state.find((x) => x.m.id === url.searchParams.get('node'))
    if (!s) return fail(res, 404, 'not_found', 'history: no such node')
    const secs = Number(url.searchParams.get('seconds') || 300)
    const from = now - secs * 1000
    return json(res, 200, { node: s.m.id, samples: s.samples.filter((x) => Date.parse(x.time) >= from) })
  }
  // Reservations are each machine's to decide: the fixture holds none.
  if (req.method === 'GET' && p === '/reservations') return json(res, 200, [])
  // Nor does it raise alerts; every machine has the built-in rules
  // (node/alerts DefaultRules), to read.
  if (req.method === 'GET' && p === '/alerts') return json(res, 200, [])
  if (req.method === 'GET' && p === '/alerts/rules') return json(res, 200, defaultRules)
  if (await pool.handle(req, res, p, { json, fail, body, answer })) return
  if (await jobs.handle(req, res, url, p, { json, fail, body, answer })) return
  if (req.method === 'GET' && p === '/events') {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store' })
    res.write(': labpool events (dev fixture)\n\n')
    clients.add(res)
    req.on('close', () => clients.delete(res))
    return
  }
  return fail(res, 404, 'not_found', `no route ${req.method} ${p}`)
}

const defaultRules = [
  { id: 'gpu-temp', metric: 'temp_c', op: '>', threshold: 85, for_seconds: 120, severity: 'critical', enabled: true },
  { id: 'gpu-idle-allocation', metric: 'granted_util_percent', op: '<', threshold: 5, for_seconds: 1800, severity: 'warning', enabled: true },
  { id: 'folder-disk-full', metric: 'folder_disk_percent', op: '>', threshold: 90, for_seconds: 60, severity: 'warning', enabled: true },
  { id: 'gpu-health', metric: 'health', op: '>=', threshold: 1, for_seconds: 0, severity: 'critical', enabled: true },
  { id: 'gpu-throttle', metric: 'throttle', op: '>', threshold: 0, for_seconds: 300, severity: 'warning', enabled: true },
  { id: 'machine-offline', metric: 'offline', op: '>', threshold: 0, for_seconds: 60, severity: 'warning', enabled: true },
]

const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.png': 'image/png' }

function serveStatic(res, url) {
  let file = normalize(join(dist, decodeURIComponent(url.pathname)))
  if (!file.startsWith(dist)) return fail(res, 400, 'invalid', 'bad path')
  if (!existsSync(file) || statSync(file).isDirectory()) file = join(dist, 'index.html')
  if (!existsSync(file)) return fail(res, 500, 'internal', 'dist/ is empty: run npm run build first')
  res.writeHead(200, { 'Content-Type': types[extname(file)] ?? 'application/octet-stream' })
  createReadStream(file).pipe(res)
}

createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost')
  if (url.pathname.startsWith('/tunnel/')) {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
    return res.end(tunnelPage(url.pathname))
  }
  if (url.pathname.startsWith('/api/v1/')) {
    api(req, res, url).catch((err) => fail(res, 500, 'internal', String(err)))
    return
  }
  serveStatic(res, url)
}).listen(port, '127.0.0.1', () => console.log(`dev fixture on http://127.0.0.1:${port}/`))
