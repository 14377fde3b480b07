// DEV FIXTURE ONLY: in-memory jobs for e2e/devserver.mjs. Mimics the jobs
// part of the local API (app/jobs_api.go): placement plan, launch with the
// same kinds of refusals, a queue, logs that follow, stats, tunnels to a fake
// Jupyter page, and "jobs:changed" events. Containers are simulated: a
// command `sh -c 'echo X; sleep N; exit C'` prints X, runs N seconds and
// exits with C; anything else prints training-like lines until stopped.
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'

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

// The plans the dev server answers are plan()'s own (app/jobs.go),
// recorded by app/devplan_test.go in devplans.json for the dev pool's
// machines in every state its scenarios reach and the requests the Launch
// dialog and the e2e scripts send. No plan rule lives here: a state or a
// request not recorded is answered as such (planPool's reason), never
// guessed. `go test ./app -run TestDevPlans -update` records them again.
const recorded = JSON.parse(readFileSync(new URL('./devplans.json', import.meta.url), 'utf8'))

// The spec fields a recorded decision is keyed by, in order
// (app/devplan_test.go devPlanFields).
const PLAN_FIELDS = ['gpus', 'gpu_ids', 'mig_ids', 'mig_profile', 'gpu_share', 'gpu_mem_bytes', 'min_gpu_mem_bytes', 'partition', 'nodes', 'gpus_per_node', 'queue']

function specKey(spec) {
  const parts = []
  for (const f of PLAN_FIELDS) {
    const v = spec?.[f]
    if (v === undefined || v === null || v === 0 || v === false || v === '' || (Array.isArray(v) && !v.length)) continue
    parts.push(`${JSON.stringify(f)}:${JSON.stringify(v)}`)
  }
  return `{${parts.join(',')}}`
}

// The jobs holding n's GPUs, as slots: a letter per GPU in index order
// ('-' none), the same letter for one job; and each slot's job.
function slotsOf(n, jobs) {
  const holder = new Map()
  for (const j of jobs ?? []) {
    if (j.node === n.id && (j.state === 'running' || j.state === 'starting')) for (const u of j.gpus ?? []) holder.set(u, j)
  }
  const bySlot = new Map()
  let held = ''
  for (const g of [...(n.gpus ?? [])].sort((a, b) => a.index - b.index)) {
    const j = holder.get(g.uuid)
    if (!j) {
      held += '-'
      continue
    }
    let slot = [...bySlot].find(([, x]) => x === j)?.[0]
    if (!slot) bySlot.set((slot = 'abcdefgh'[bySlot.size]), j)
    held += slot
  }
  return { key: `${n.name}${n.online ? '' : '(off)'}:${held}`, bySlot }
}

// app.load: what orders machines that fit alike (the key of a pick).
function load(n) {
  if (!n.gpus?.length) return n.host ? n.host.cpu_percent : 100
  return n.gpus.reduce((s, g) => s + g.util_percent, 0) / n.gpus.length
}

// The recorded tokens of a job's ID and names, made the live job's.
function fill(text, node, bySlot) {
  return (text ?? '').replace(/<<(id|job|oid|owner):([^:>]+):([a-h])>>/g, (all, what, n, slot) => {
    const j = n === node ? bySlot.get(slot) : null
    if (!j) return all
    return { id: j.id, job: j.name, oid: j.owner, owner: j.owner_name }[what]
  })
}

/** Names a missing recording plainly, as a plan that does not fit. */
class Unrecorded extends Error {}

// n's recorded plan for spec, with its live GPUs and jobs filled in.
function planNode(n, spec, jobs, slotsByNode) {
  const { key, bySlot } = slotsByNode.get(n.id)
  const rec = recorded.nodes[`${key} ${specKey(spec)}`]
  if (!rec) throw new Unrecorded(`the dev server has no recorded plan of ${key} for ${specKey(spec)} (app/devplan_test.go records them)`)
  const fillAll = (t) => {
    let out = fill(t, n.name, bySlot)
    for (const [other, s] of slotsByNode) if (other !== n.id) out = fill(out, s.name, s.bySlot)
    return out
  }
  const live = new Map((n.gpus ?? []).map((g) => [g.index, g]))
  const gpus = rec.gpus.map((r) => {
    const g = live.get(r.index)
    const pg = { index: r.index, uuid: g.uuid, name: g.name, mem_total_bytes: g.mem_total_bytes, mem_used_bytes: g.mem_used_bytes, ...(g.mem_unified ? { mem_unified: true } : {}), util_percent: g.util_percent, state: r.state }
    const j = r.slot ? bySlot.get(r.slot) : null
    if (j) Object.assign(pg, { job: j.id, job_name: j.name, owner: j.owner, owner_name: j.owner_name })
    if (r.reason) pg.reason = fillAll(r.reason)
    pg.status = fillAll(r.status)
    return pg
  })
  const p = { node: n.id, node_name: n.name, fits: rec.fits, reason: fillAll(rec.reason), free: rec.free, gpus }
  if (rec.picked) p.picked = rec.picked
  if (rec.placement) p.placement = rec.placement
  return p
}

/**
 * Answers POST /api/v1/jobs/plan as the Service would: where spec runs
 * among nodes (on named when given), given the jobs of the pool, replaying
 * plan()'s recorded decisions. A state or a request not recorded is a plan
 * that does not fit, saying so.
 */
export function planPool(nodes, named, spec, jobs) {
  const slotsByNode = new Map(nodes.map((n) => [n.id, { name: n.name, ...slotsOf(n, jobs) }]))
  try {
    const out = { images: [], nodes: nodes.map((n) => planNode(n, spec, jobs, slotsByNode)) }
    if (named) return { ...out.nodes.find((np) => np.node === named.id), ...out }
    const order = nodes.filter((n) => n.online).sort((a, b) => load(a) - load(b)).map((n) => n.name)
    const poolKey = `${nodes.map((n) => slotsByNode.get(n.id).key).join(' ')} load:${order.join(',')} ${specKey(spec)}`
    const pick = recorded.picks[poolKey]
    if (!pick) throw new Unrecorded(`the dev server has no recorded pick for ${poolKey} (app/devplan_test.go records them)`)
    let reason = pick.reason
    for (const s of slotsByNode.values()) reason = fill(reason, s.name, s.bySlot)
    const chosen = out.nodes.find((np) => np.node_name === pick.node)
    if (!chosen) return { node: '', node_name: '', fits: false, reason, free: 0, gpus: [], ...out }
    return { ...chosen, reason, ...out }
  } catch (err) {
    if (!(err instanceof Unrecorded)) throw err
    return { node: '', node_name: '', fits: false, reason: err.message, free: 0, gpus: [], images: [], nodes: [] }
  }
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

  // Starts j if its machine's recorded plan says its GPUs are free now
  // (the same request, not queued); a queued job keeps waiting otherwise.
  function tryStart(j) {
    const n = nodeOf(j.node)
    if (!n?.online) return false
    const p = planPool(nodes(), n, { ...j.spec, queue: false }, jobs)
    if (!p.fits) return false
    const want = j.spec.gpu_ids?.length ? j.spec.gpu_ids : (p.picked ?? [])
    const grant = want.map((i) => n.gpus.find((g) => g.index === i))
    if (grant.some((g) => !g)) return false
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
    const r1 = mk({ name: 'finetune-llama-8b', node: lab1.id, node_name: lab1.name, state: 'running', gpus: [g(lab1, 1)], gpu_indexes: [1], created: iso(t - 7450e3), started: iso(t - 7440e3), spec: { image: 'nvcr.io/nvidia/pytorch:24.05-py3', cmd: ['python', 'train.py', '--model', 'llama-3-8b'], gpus: 1, memory_bytes: 96 * GiB, shm_bytes: 16 * GiB, mounts: [{ folder: 'datasets', target: '/data' }] } })
    run(Object.assign(r1, { state: 'starting' }))
    r1.started = iso(t - 7440e3)
    const r3 = mk({ name: 'sdxl-lora', node: lab3.id, node_name: lab3.name, owner: 'BOB', owner_name: 'bob-desktop', state: 'running', gpus: [g(lab3, 0)], gpu_indexes: [0], ports: { 8888: 40123 }, created: iso(t - 1900e3), started: iso(t - 1890e3), spec: { image: 'jupyter/scipy-notebook:2024-05-27', gpus: 1, ports: [8888] } })
    run(Object.assign(r3, { state: 'starting' }))
    r3.started = iso(t - 1890e3)
    mk({ name: 'big-sweep', node: lab1.id, node_name: lab1.name, owner: 'BOB', owner_name: 'bob-desktop', state: 'queued', created: iso(t - 600e3), error: 'waiting for GPUs: 1 of 2 GPUs free that match (busy: GPU 1: job finetune-llama-8b of alice-laptop)', spec: { image: 'nvcr.io/nvidia/pytorch:24.05-py3', cmd: ['python', 'sweep.py'], gpus: 2, queue: true } })
    mk({ name: 'eval-mmlu', node: lab1.id, node_name: lab1.name, state: 'exited', gpus: [g(lab1, 0), g(lab1, 1)], gpu_indexes: [0, 1], created: iso(t - 90000e3), started: iso(t - 89990e3), finished: iso(t - 80000e3), exit_code: 0, gpu_seconds: 19980, spec: { image: 'nvcr.io/nvidia/pytorch:24.05-py3', gpus: 2 } })
    mk({ name: 'bad-lr', node: lab3.id, node_name: lab3.name, owner: 'BOB', owner_name: 'bob-desktop', state: 'failed', gpus: [g(lab3, 0)], gpu_indexes: [0], created: iso(t - 40000e3), started: iso(t - 39990e3), finished: iso(t - 39000e3), exit_code: 1, error: 'exit code 1', gpu_seconds: 990, spec: { image: 'nvcr.io/nvidia/pytorch:24.05-py3', gpus: 1 } })
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
