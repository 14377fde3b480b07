// DEV FIXTURE ONLY: in-memory jobs for e2e/devserver.mjs. Mimics the jobs
// part of the local API (app/jobs_api.go): placement plan, launch with the
// same kinds of refusals, a queue, logs that follow, stats, tunnels to a fake
// Jupyter page, and "jobs:changed" events. Containers are simulated: a
// command `sh -c 'echo X; sleep N; exit C'` prints X, runs N seconds and
// exits with C; anything else prints training-like lines until stopped.
import { randomBytes } from 'node:crypto'

const GiB = 1024 ** 3
const folders = ['datasets', 'results', 'home']
const images = {
  lab1: [
    ['nvcr.io/nvidia/pytorch:24.05-py3', 19.2],
    ['jupyter/scipy-notebook:2024-05-27', 4.6],
    ['labpool-test/busybox:1', 0.004],
  ],
  lab2: [
    ['python:3.12-slim', 0.13],
    ['labpool-test/busybox:1', 0.004],
  ],
  lab3: [
    ['nvcr.io/nvidia/pytorch:24.05-py3', 19.2],
    ['ollama/ollama:0.3.12', 3.1],
    ['labpool-test/busybox:1', 0.004],
  ],
}

/**
 * The placement rule of app/jobs.go (plan and planFor) as the Service
 * answers POST /api/v1/jobs/plan: where spec runs among nodes (on named when
 * given), given the jobs of the pool, and each machine's GPUs as free,
 * small, held (by a running or starting job) or busy (a process outside
 * labpool). Not a rule of its own: app/plan_fixture_test.go runs both over
 * the same cases and wants the same JSON.
 */
export function planPool(nodes, named, spec, jobs) {
  const out = { images: [], nodes: [] }
  let best = null
  let bestLoad = 0
  let leastLoad = 0
  const reasons = []
  for (const n of nodes) {
    const np = planNode(n, spec, jobs)
    out.nodes.push(np)
    if (named || !n.online) continue
    if (!np.fits) {
      reasons.push(`${n.name}: ${np.reason}`)
      continue
    }
    if (!best || load(n) < leastLoad) leastLoad = load(n)
    if (!best || placedBetter(np, load(n), best, bestLoad)) {
      best = np
      bestLoad = load(n)
    }
  }
  let pick
  if (named) pick = planNode(named, spec, jobs)
  else if (best && bestLoad > leastLoad)
    pick = { ...best, reason: `${best.node_name} has ${best.free} free GPUs, cooler or better NVLinked than those of less loaded machines${weighed(best.placement)}` }
  else if (best) pick = { ...best, reason: `${best.node_name} has ${best.free} free GPUs and is the least loaded that fits${weighed(best.placement)}` }
  else pick = { node: '', node_name: '', fits: false, reason: `no machine fits: ${reasons.join('; ')}`, free: 0, gpus: [] }
  const { _hot, _unlinked, ...shown } = pick
  return { ...shown, ...out, nodes: out.nodes.map(({ _hot, _unlinked, ...np }) => np) }
}

// app.placedBetter: fewer hot GPUs, then fewer pairs without NVLink, then less load.
function placedBetter(a, aLoad, b, bLoad) {
  if ((a._hot ?? 0) !== (b._hot ?? 0)) return (a._hot ?? 0) < (b._hot ?? 0)
  if ((a._unlinked ?? 0) !== (b._unlinked ?? 0)) return (a._unlinked ?? 0) < (b._unlinked ?? 0)
  return aLoad < bLoad
}

// app.planFor: whether spec fits on n, and the state of each of its GPUs.
function planNode(n, spec, jobs) {
  const p = { node: n.id, node_name: n.name, fits: false, reason: '', free: 0, gpus: [] }
  const holder = new Map()
  for (const j of jobs) {
    if (j.node === n.id && (j.state === 'running' || j.state === 'starting')) for (const u of j.gpus ?? []) holder.set(u, j)
  }
  const busy = []
  const free = new Set()
  const cands = [] // the GPUs free that match, as placement weighs them
  const gpus = n.gpus ?? []
  for (const g of gpus) {
    const pg = { index: g.index, uuid: g.uuid, name: g.name, mem_total_bytes: g.mem_total_bytes, mem_used_bytes: g.mem_used_bytes, ...(g.mem_unified ? { mem_unified: true } : {}), util_percent: g.util_percent, state: 'free' }
    const j = holder.get(g.uuid)
    if (j) {
      Object.assign(pg, { state: 'held', job: j.id, job_name: j.name, owner: j.owner, owner_name: j.owner_name })
      busy.push(`GPU ${g.index}: job ${j.name} of ${j.owner_name}`)
    } else if (g.health === 'quarantined' || g.health === 'lost') {
      Object.assign(pg, { state: 'faulty', reason: g.health + (g.health_reason ? `: ${g.health_reason}` : '') })
      busy.push(`GPU ${g.index}: ${pg.reason}`)
    } else if (g.mig?.enabled) {
      Object.assign(pg, { state: 'busy', reason: 'MIG on (ask for its instances by profile or UUID: labpool gpus lists them)' })
      busy.push(`GPU ${g.index}: ${pg.reason}`)
    } else if (g.processes > 0) {
      pg.state = 'busy'
      busy.push(`GPU ${g.index}: a process outside labpool`)
    } else if (gpuMemFor(g) < (spec.min_gpu_mem_bytes ?? 0)) {
      pg.state = 'small'
    }
    pg.status = { held: `${pg.job_name} · ${pg.owner_name}`, busy: pg.reason || 'in use outside labpool', faulty: pg.reason, small: `under ${bytesText(spec.min_gpu_mem_bytes ?? 0)}` }[pg.state] ?? 'free'
    if (pg.state === 'free' || pg.state === 'small') {
      free.add(g.index)
      p.free++
    }
    if (pg.state === 'free') cands.push(g)
    p.gpus.push(pg)
  }
  p.gpus.sort((a, b) => a.index - b.index)
  if (!n.online) return { ...p, reason: `${n.name} is offline` }
  const busyText = busy.length ? ` (busy: ${busy.join('; ')})` : ''
  if (!n.containers) return { ...p, reason: 'cannot run containers' + (n.containers_error ? `: ${n.containers_error}` : '') }
  const ids = spec.gpu_ids ?? []
  const want = spec.gpus ?? 0
  if (ids.length) {
    for (const i of ids) {
      const bad = p.gpus.find((g) => g.index === i && g.state === 'faulty')
      if (bad) return { ...p, reason: `refused by rule "quarantined GPU": gpu ${i} ${bad.reason}` }
      if (free.has(i)) continue
      p.reason = `GPU ${i} is busy or absent${busyText}`
      if (!spec.queue) return p
    }
  } else if (want > gpus.length) {
    return { ...p, reason: `has ${gpus.length} GPUs, ${want} asked` }
  } else if (want > 0) {
    const fit = p.gpus.filter((g) => g.state === 'free').length
    if (fit < want) {
      p.reason = `${fit} of ${gpus.length} GPUs free that match${busyText}`
      if (!spec.queue) return p
      p.reason += '; the job will wait in the queue'
    }
  }
  p.fits = true
  if (!p.reason) p.reason = want === 0 && !ids.length ? `no GPU asked (${p.free} of ${gpus.length} free)` : `${p.free} of ${gpus.length} GPUs free`
  if (want > 0 && !ids.length && cands.length >= want) {
    const [picked, why] = place(cands, want)
    p.picked = picked.map((g) => g.index)
    const sc = score(picked)
    p._hot = sc.hot
    p._unlinked = sc.unlinked
    p.placement = why
    p.reason += weighed(why)
  }
  return p
}

// n bytes as PlanGPU.Status writes them (app/planfit.go bytesText).
function bytesText(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']
  let i = 0
  let v = n
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024
    i++
  }
  if (i === 0) return `${Math.round(v)} B`
  return `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`
}

// What a placement weighed, as the reason's tail ("" when nothing).
function weighed(placement) {
  const i = (placement ?? '').indexOf('; ')
  return i < 0 ? '' : placement.slice(i)
}

// node/jobs.Place: n of the free GPUs, avoiding hot or throttling ones, then
// an NVLinked set (most links, nearest PCIe), then the coolest.
const HOT_C = 85
const MAX_SETS = 20000
const PCIE = { PIX: 1, PXB: 2, PHB: 3, NODE: 4, SYS: 5, '': 5 }
// gpuMemFor is jobs.GPUMemFor: all of a discrete GPU's memory, what the
// system has free on a unified one (a GB10).
function gpuMemFor(g) {
  return g.mem_unified ? Math.max(0, g.mem_total_bytes - g.mem_used_bytes) : g.mem_total_bytes
}

function hot(g) {
  const t = g.temp_c.toFixed(0)
  if (g.health === 'warning') return g.health_reason ? `${g.health_reason} at ${t} °C` : `warning at ${t} °C`
  if (g.temp_c >= HOT_C) return `hot at ${t} °C`
  return ''
}
const link = (g, peer) => (g.links ?? []).find((l) => l.peer === peer) ?? { peer, nvlinks: 0, pcie: '' }
function score(set) {
  const s = { hot: 0, unlinked: 0, minLinks: -1, pcie: 0, temp: 0 }
  set.forEach((g, a) => {
    if (hot(g)) s.hot++
    s.temp += g.temp_c
    for (const h of set.slice(a + 1)) {
      const l = link(g, h.index)
      if (!l.nvlinks) s.unlinked++
      if (s.minLinks < 0 || l.nvlinks < s.minLinks) s.minLinks = l.nvlinks
      s.pcie += PCIE[l.pcie] ?? 5
    }
  })
  return s
}
const less = (a, b) => a.hot - b.hot || a.unlinked - b.unlinked || b.minLinks - a.minLinks || a.pcie - b.pcie || a.temp - b.temp
function binomial(n, k) {
  let r = 1
  for (let i = 0; i < k; i++) {
    r = (r * (n - i)) / (i + 1)
    if (r > MAX_SETS) return MAX_SETS + 1
  }
  return r
}
function* combinations(n, k) {
  const idx = Array.from({ length: k }, (_, i) => i)
  for (;;) {
    yield idx
    let i = k - 1
    while (i >= 0 && idx[i] === n - k + i) i--
    if (i < 0) return
    idx[i]++
    for (let j = i + 1; j < k; j++) idx[j] = idx[j - 1] + 1
  }
}
function place(free, n) {
  free = [...free].sort((a, b) => a.index - b.index)
  let best = null
  let bestScore = null
  if (binomial(free.length, n) <= MAX_SETS) {
    for (const idx of combinations(free.length, n)) {
      const set = idx.map((i) => free[i])
      const sc = score(set)
      if (!best || less(sc, bestScore) < 0) [best, bestScore] = [set, sc]
    }
  } else {
    best = [...free].sort((a, b) => (hot(a) ? 1 : 0) - (hot(b) ? 1 : 0) || a.temp_c - b.temp_c || a.index - b.index).slice(0, n)
    best.sort((a, b) => a.index - b.index)
    bestScore = score(best)
  }
  return [best, explain(free, best, bestScore)]
}
function explain(free, set, sc) {
  const parts = [`GPUs ${set.map((g) => g.index).join(',')}`]
  if (set.length > 1) {
    const pairs = (set.length * (set.length - 1)) / 2
    if (sc.unlinked === 0) parts.push(`every pair NVLinked (at least ${sc.minLinks} links)`)
    else if (sc.unlinked < pairs) parts.push(`${sc.unlinked} pairs without NVLink (no free set has fewer)`)
    else if (free.some((g) => (g.links ?? []).some((l) => l.nvlinks > 0))) parts.push('no NVLink between them (none of the free NVLinked GPUs would do)')
  }
  const avoided = []
  const taken = []
  for (const g of free) {
    const why = hot(g)
    if (!why) continue
    ;(set.some((s) => s.index === g.index) ? taken : avoided).push(`GPU ${g.index} (${why})`)
  }
  if (avoided.length) parts.push(`avoided ${avoided.join(', ')}`)
  if (taken.length) parts.push(`took ${taken.join(', ')}: no cooler GPU free`)
  const hottest = Math.max(...set.map((g) => g.temp_c))
  if (!avoided.length && !taken.length && set.length < free.length && free.some((g) => g.temp_c > hottest)) parts.push('the coolest')
  return parts.join('; ')
}

// app.load: mean GPU utilization, or CPU without GPUs.
function load(n) {
  if (!n.gpus?.length) return n.host ? n.host.cpu_percent : 100
  return n.gpus.reduce((s, g) => s + g.util_percent, 0) / n.gpus.length
}

/**
 * Creates the fixture's jobs over the given machines. nodes() returns the
 * current node views; self is this machine; emit(name, data) sends an event;
 * role() is this machine's role in the pool ("" outside one): a viewer launches nothing.
 */
export function createJobs({ nodes, self, emit, seed = true, port, role = () => '' }) {
  const jobs = [] // newest first
  const logs = new Map() // job id -> { text, listeners: Set<(chunk|null) => void> }
  const tunnels = []
  const now = () => Date.now()
  const iso = (t) => new Date(t).toISOString()
  const newID = () => randomBytes(16).toString('hex')

  const nodeOf = (ref) => nodes().find((n) => n.id === ref || n.name === ref)
  const held = (nodeID) => {
    const m = new Map()
    for (const j of jobs) {
      if (j.node === nodeID && (j.state === 'running' || j.state === 'starting')) for (const u of j.gpus) m.set(u, j)
    }
    return m
  }

  function plan(req) {
    const spec = req.spec ?? {}
    let named = null
    if (req.node) {
      named = nodeOf(req.node)
      if (!named) throw apiErr(404, 'not_found', `no machine ${JSON.stringify(req.node)} in the pool`)
    }
    return planPool(nodes(), named, spec, jobs)
  }

  function refuse(spec) {
    const rules = [
      [spec.privileged, 'privileged mode is refused (rule: no-privileged)'],
      [spec.network_mode && spec.network_mode !== 'bridge', `network mode ${spec.network_mode} is refused (rule: bridge-network-only)`],
      [spec.pid_mode, 'host PID namespace is refused (rule: no-host-namespaces)'],
      [spec.cap_add?.length, `capabilities ${spec.cap_add?.join(', ')} are refused (rule: capability-allowlist)`],
      [spec.devices?.length, 'devices other than the granted GPUs are refused (rule: gpus-only)'],
      [spec.binds?.length, 'raw bind mounts are refused; mount a shared folder (rule: shared-folders-only)'],
    ]
    for (const [bad, msg] of rules) if (bad) throw apiErr(403, 'refused', msg)
  }

  function launch(req) {
    if (role() === 'viewer') throw apiErr(403, 'forbidden', 'viewers cannot launch jobs: ask an admin to make this machine a member')
    const spec = req.spec ?? {}
    if (!spec.image) throw apiErr(400, 'invalid', 'an image is required (command jobs without one run on a Slurm cluster only)')
    refuse(spec)
    const p = plan(req)
    if (!p.fits) throw apiErr(409, 'no_fit', p.reason)
    const n = nodeOf(p.node)
    if (!(images[n.name] ?? []).some(([t]) => t === spec.image)) {
      throw apiErr(400, 'invalid', `unknown image ${JSON.stringify(spec.image)} on ${n.name}: load or pull it first (labpool image load ${n.name} FILE.tar)`)
    }
    for (const m of spec.mounts ?? []) {
      if (!folders.includes(m.folder)) throw apiErr(400, 'invalid', `no shared folder ${JSON.stringify(m.folder)} on ${n.name} (shared: ${folders.join(', ')})`)
    }
    for (const cp of spec.ports ?? []) {
      if (cp === 22) throw apiErr(409, 'conflict', `port 22: in use on ${n.name}'s loopback`)
    }
    const id = newID()
    const j = {
      id, name: spec.name || `${spec.image.split('/').pop().split(':')[0]}-${id.slice(0, 4)}`,
      node: n.id, node_name: n.name, owner: self.id, owner_name: self.name, owner_verified: true, image: spec.image, spec,
      state: 'queued', gpus: [], gpu_indexes: [], ports: {}, created: iso(now()), started: null, finished: null,
      exit_code: null, error: '', gpu_seconds: 0, spec_hash: id.slice(0, 12), stale: false, _plan: null,
    }
    jobs.unshift(j)
    logs.set(id, { text: '', listeners: new Set() })
    if (!tryStart(j)) j.error = `waiting for GPUs: ${p.reason}`
    changed()
    return view(j)
  }

  // Starts j if its GPUs are free; a queued job keeps waiting otherwise.
  function tryStart(j) {
    const n = nodeOf(j.node)
    if (!n?.online) return false
    const holders = held(n.id)
    const free = (n.gpus ?? []).filter((g) => !holders.has(g.uuid) && gpuMemFor(g) >= (j.spec.min_gpu_mem_bytes ?? 0))
    let grant
    if (j.spec.gpu_ids?.length) {
      grant = j.spec.gpu_ids.map((i) => free.find((g) => g.index === i))
      if (grant.some((g) => !g)) return false
    } else {
      if (free.length < (j.spec.gpus ?? 0)) return false
      grant = free.slice(0, j.spec.gpus ?? 0)
    }
    j.gpus = grant.map((g) => g.uuid)
    j.gpu_indexes = grant.map((g) => g.index)
    j.state = 'starting'
    j.error = ''
    j.ports = Object.fromEntries((j.spec.ports ?? []).map((cp, k) => [cp, 32768 + ((Math.random() * 20000) | 0) + k]))
    setTimeout(() => run(j), 700)
    return true
  }

  function run(j) {
    if (j.state !== 'starting') return
    j.state = 'running'
    j.started = iso(now())
    changed()
    const cmd = (j.spec.cmd ?? []).join(' ')
    const script = /^sh -c /.test(cmd) ? cmd.slice(6) : ''
    if (script) {
      for (const m of script.matchAll(/echo\s+("([^"]*)"|'([^']*)'|([^;&|]+))/g)) write(j, `${(m[2] ?? m[3] ?? m[4]).trim()}\n`)
      const sleep = /sleep\s+(\d+)/.exec(script)
      const exit = /exit\s+(\d+)/.exec(script)
      if (sleep || exit) j._timer = setTimeout(() => end(j, exit ? Number(exit[1]) : 0), Math.min(Number(sleep?.[1] ?? 0), 3600) * 1000)
      else j._timer = setTimeout(() => end(j, 0), 200)
      return
    }
    if (/jupyter|notebook/.test(j.image)) {
      write(j, `[I 2026-05-27 10:12:03.114 ServerApp] jupyter_lsp | extension was successfully linked.\n`)
      write(j, `[I 2026-05-27 10:12:03.402 ServerApp] Serving notebooks from local directory: /home/jovyan\n`)
      write(j, `[I 2026-05-27 10:12:03.402 ServerApp] Jupyter Server 2.14.0 is running at:\n[I 2026-05-27 10:12:03.402 ServerApp] http://127.0.0.1:8888/lab\n`)
      return
    }
    let step = 0
    write(j, `Using ${j.gpu_indexes.length || 'no'} GPU${j.gpu_indexes.length === 1 ? '' : 's'}: ${j.gpu_indexes.map((i) => `cuda:${i}`).join(', ') || 'cpu'}\n`)
    j._timer = setInterval(() => {
      step += 50
      const loss = (2.3 * Math.exp(-step / 3000) + 0.05 * Math.random()).toFixed(4)
      write(j, `epoch ${1 + Math.floor(step / 1000)} step ${step} loss ${loss} lr 3.0e-04 ${(1800 + Math.random() * 200).toFixed(0)} tok/s\n`)
    }, 1000)
  }

  function write(j, text) {
    const l = logs.get(j.id)
    if (!l) return
    l.text = (l.text + text).slice(-1_000_000)
    for (const f of l.listeners) f(text)
  }

  function end(j, code, why = '') {
    if (!['queued', 'starting', 'running'].includes(j.state)) return
    clearInterval(j._timer)
    clearTimeout(j._timer)
    if (j.started) j.gpu_seconds = ((now() - Date.parse(j.started)) / 1000) * j.gpus.length
    j.state = code === 0 || why === 'stopped' ? 'exited' : 'failed'
    j.exit_code = j.started ? code : null
    j.finished = iso(now())
    if (code !== 0 && why !== 'stopped') j.error = `exit code ${code}`
    for (const f of logs.get(j.id)?.listeners ?? []) f(null)
    changed()
    startQueued()
  }

  function startQueued() {
    for (const q of [...jobs].reverse()) if (q.state === 'queued' && tryStart(q)) changed()
  }

  const find = (ref) => jobs.find((j) => j.id === ref) ?? jobs.filter((j) => j.id.startsWith(ref) || j.name === ref).at(0)
  const must = (ref) => {
    const j = find(decodeURIComponent(ref))
    if (!j || j.removed) throw apiErr(404, 'not_found', `no job ${JSON.stringify(ref)}`)
    return j
  }

  function view(j) {
    const n = nodeOf(j.node)
    const out = { ...j, stale: !n?.online }
    for (const k of Object.keys(out)) if (k.startsWith('_')) delete out[k]
    if (j.state === 'running' && j.started) out.gpu_seconds = Math.floor((now() - Date.parse(j.started)) / 1000 / 5) * 5 * j.gpus.length
    return out
  }
  const list = (all) => jobs.filter((j) => !j.removed && (all || ['queued', 'starting', 'running'].includes(j.state))).map(view)

  let dirty = true
  const changed = () => (dirty = true)
  let lastSent = ''
  setInterval(() => {
    startQueued()
    const v = JSON.stringify(list(true))
    if (!dirty && v === lastSent) return
    dirty = false
    lastSent = v
    emit('jobs:changed', list(true))
  }, 1000)

  function stats(j) {
    const n = nodeOf(j.node)
    const limit = j.spec.memory_bytes || n?.host?.mem_total_bytes || 64 * GiB
    const t = now() / 1000
    return {
      cpu_percent: j.state === 'running' ? 180 + 120 * Math.sin(t / 7) : 0,
      mem_used_bytes: j.state === 'running' ? Math.round(limit * (0.3 + 0.1 * Math.sin(t / 11))) : 0,
      mem_limit_bytes: limit,
      gpus: j.gpus.map((u, k) => ({ uuid: u, index: j.gpu_indexes[k], util_percent: j.state === 'running' ? 85 + 10 * Math.sin(t / 3 + k) : 0, mem_used_bytes: j.state === 'running' ? 31 * GiB : 0 })),
    }
  }

  function seedJobs() {
    const ns = nodes()
    const [lab1, , lab3] = ns
    const mk = (over) => {
      const id = newID()
      const j = {
        id, owner: 'ALICE7LAPTOP', owner_name: 'alice-laptop', owner_verified: true, gpus: [], gpu_indexes: [], ports: {}, started: null, finished: null,
        exit_code: null, error: '', gpu_seconds: 0, spec_hash: id.slice(0, 12), stale: false, ...over,
      }
      j.image = j.spec.image
      jobs.push(j)
      logs.set(id, { text: '', listeners: new Set() })
      return j
    }
    const t = now()
    const g = (n, i) => n.gpus[i].uuid
    const r1 = mk({ name: 'finetune-llama-8b', node: lab1.id, node_name: 'lab1', state: 'running', gpus: [g(lab1, 1)], gpu_indexes: [1], created: iso(t - 7450e3), started: iso(t - 7440e3), spec: { image: 'nvcr.io/nvidia/pytorch:24.05-py3', cmd: ['python', 'train.py', '--model', 'llama-3-8b'], gpus: 1, memory_bytes: 96 * GiB, shm_bytes: 16 * GiB, mounts: [{ folder: 'datasets', target: '/data' }] } })
    run(Object.assign(r1, { state: 'starting' }))
    r1.started = iso(t - 7440e3)
    const r3 = mk({ name: 'sdxl-lora', node: lab3.id, node_name: 'lab3', owner: 'BOB', owner_name: 'bob-desktop', state: 'running', gpus: [g(lab3, 0)], gpu_indexes: [0], ports: { 8888: 40123 }, created: iso(t - 1900e3), started: iso(t - 1890e3), spec: { image: 'jupyter/scipy-notebook:2024-05-27', gpus: 1, ports: [8888] } })
    run(Object.assign(r3, { state: 'starting' }))
    r3.started = iso(t - 1890e3)
    mk({ name: 'big-sweep', node: lab1.id, node_name: 'lab1', owner: 'BOB', owner_name: 'bob-desktop', state: 'queued', created: iso(t - 600e3), error: 'waiting for GPUs: 1 of 2 GPUs free that match (busy: GPU 1: job finetune-llama-8b of alice-laptop)', spec: { image: 'nvcr.io/nvidia/pytorch:24.05-py3', cmd: ['python', 'sweep.py'], gpus: 2, queue: true } })
    mk({ name: 'eval-mmlu', node: lab1.id, node_name: 'lab1', state: 'exited', gpus: [g(lab1, 0), g(lab1, 1)], gpu_indexes: [0, 1], created: iso(t - 90000e3), started: iso(t - 89990e3), finished: iso(t - 80000e3), exit_code: 0, gpu_seconds: 19980, spec: { image: 'nvcr.io/nvidia/pytorch:24.05-py3', gpus: 2 } })
    mk({ name: 'bad-lr', node: lab3.id, node_name: 'lab3', owner: 'BOB', owner_name: 'bob-desktop', state: 'failed', gpus: [g(lab3, 0)], gpu_indexes: [0], created: iso(t - 40000e3), started: iso(t - 39990e3), finished: iso(t - 39000e3), exit_code: 1, error: 'exit code 1', gpu_seconds: 990, spec: { image: 'nvcr.io/nvidia/pytorch:24.05-py3', gpus: 1 } })
    jobs.sort((a, b) => Date.parse(b.created) - Date.parse(a.created))
  }
  if (seed) seedJobs()

  // Handles /api/v1 paths of jobs; returns false for other paths.
  async function handle(req, res, url, p, { json, fail, body, answer }) {
    const m = (re) => p.match(re)
    const reply = (fn) => answer(res, fn)
    const readJSON = async () => JSON.parse((await body(req)) || '{}')
    let r
    if (req.method === 'GET' && p === '/jobs') return reply(() => list(url.searchParams.get('all') === '1')), true
    if (req.method === 'POST' && p === '/jobs') return reply(async () => launch(await readJSON())), true
    if (req.method === 'POST' && p === '/jobs/plan') return reply(async () => plan(await readJSON())), true
    if (req.method === 'GET' && p === '/tunnels') return reply(() => tunnels), true
    if (req.method === 'GET' && p === '/images') {
      return reply(() => {
        const n = nodeOf(url.searchParams.get('node') || self.id)
        if (!n) throw apiErr(404, 'not_found', 'no such machine')
        if (!n.online) throw apiErr(503, 'unreachable', `${n.name} is offline`)
        return (images[n.name] ?? []).map(([tag, gb], k) => ({ id: `sha256:${n.name}${k}`.padEnd(71, '0'), tags: [tag], size: Math.round(gb * GiB), created: iso(now() - (k + 1) * 86400e3 * 9) }))
      }), true
    }
    if ((r = m(/^\/jobs\/([^/]+)$/)) && req.method === 'GET') return reply(() => view(must(r[1]))), true
    if ((r = m(/^\/jobs\/([^/]+)$/)) && req.method === 'DELETE') {
      return reply(() => {
        const j = must(r[1])
        if (['starting', 'running'].includes(j.state) && url.searchParams.get('force') !== '1') {
          throw apiErr(409, 'running', `remove ${j.name}: a running job is removed only with force: it is ${j.state}; stop it first, or remove it with --force (its work is lost)`)
        }
        if (['queued', 'starting', 'running'].includes(j.state)) end(j, j.state === 'queued' ? 0 : 137, 'stopped')
        j.removed = true
        changed()
      }), true
    }
    if ((r = m(/^\/jobs\/([^/]+)\/stop$/)) && req.method === 'POST') {
      return reply(() => {
        const j = must(r[1])
        end(j, j.state === 'queued' ? 0 : 143, 'stopped')
        return view(j)
      }), true
    }
    if ((r = m(/^\/jobs\/([^/]+)\/stats$/)) && req.method === 'GET') return reply(() => stats(must(r[1]))), true
    if ((r = m(/^\/jobs\/([^/]+)\/open$/)) && req.method === 'POST') {
      return reply(async () => {
        const j = must(r[1])
        const { port: cp } = await readJSON()
        if (j.state !== 'running') throw apiErr(409, 'conflict', `job ${j.name} is ${j.state}, not running`)
        if (!(j.spec.ports ?? []).includes(cp)) throw apiErr(400, 'invalid', `port ${cp} is not published by job ${j.name} (ports: ${(j.spec.ports ?? []).join(', ') || 'none'}); launch it with --port ${cp}`)
        const t = { job: j.id, port: cp, url: `http://127.0.0.1:${port}/tunnel/${j.id.slice(0, 8)}/${cp}/` }
        if (!tunnels.some((x) => x.url === t.url)) tunnels.push(t)
        return t
      }), true
    }
    if ((r = m(/^\/jobs\/([^/]+)\/logs$/)) && req.method === 'GET') {
      let j
      try {
        j = must(r[1])
      } catch (err) {
        return fail(res, err.status, err.code, err.message), true
      }
      const l = logs.get(j.id)
      const tail = Number(url.searchParams.get('tail') || 0)
      let text = l.text
      if (tail > 0) text = text.split('\n').slice(-tail - 1).join('\n')
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' })
      res.write(text)
      if (url.searchParams.get('follow') !== '1' || !['queued', 'starting', 'running'].includes(j.state)) return res.end(), true
      const f = (chunk) => (chunk === null ? res.end() : res.write(chunk))
      l.listeners.add(f)
      req.on('close', () => l.listeners.delete(f))
      return true
    }
    return false
  }

  // GPU indexes held by jobs on a node, for the node views.
  const heldIndexes = (nodeID) => new Set(jobs.filter((j) => j.node === nodeID && j.state === 'running').flatMap((j) => j.gpu_indexes))

  return { handle, heldIndexes }
}

function apiErr(status, code, message) {
  return Object.assign(new Error(message), { status, code })
}

/** The page a tunnel leads to in the fixture. */
export function tunnelPage(path) {
  return `<!doctype html><meta charset="utf-8"><title>JupyterLab (dev fixture)</title>
<body style="font-family:system-ui;background:#f7f7f7;margin:3rem"><h1>JupyterLab</h1>
<p>dev fixture: this stands for the container's port reached through the labpool tunnel (${path.replace(/[<>&"]/g, '')}).</p></body>`
}
