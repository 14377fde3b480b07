// Pure helpers for the jobs view and the launch dialog.
import { formatDuration } from './format.ts'
import type { Job, JobState, Mount, Spec } from '../api/jobs.ts'
import type { Node } from '../api/types.ts'
import { parseTimeLimit } from './cluster.ts'

// Single letters and "iB" units are binary, as in docker's --memory; "kB",
// "MB", "GB", "TB" are decimal. Mirrors node/jobs/size.go.
const sizeUnits: Record<string, number> = {
  '': 1, b: 1,
  k: 2 ** 10, kib: 2 ** 10, kb: 1e3,
  m: 2 ** 20, mib: 2 ** 20, mb: 1e6,
  g: 2 ** 30, gib: 2 ** 30, gb: 1e9,
  t: 2 ** 40, tib: 2 ** 40, tb: 1e12,
}

/**
 * Parses "32g", "20GiB", "512m", "1.5TB" or a byte count into bytes; null
 * when malformed. Same rules as jobs.ParseSize on the Go side.
 */
export function parseSize(s: string): number | null {
  const m = /^\s*([0-9.]+)\s*([a-zA-Z]*)\s*$/.exec(s)
  if (!m || !/^(\d+\.?\d*|\.\d+)$/.test(m[1])) return null
  const mult = sizeUnits[m[2].toLowerCase()]
  if (mult === undefined) return null
  const b = Number(m[1]) * mult
  if (!Number.isFinite(b) || b > Number.MAX_SAFE_INTEGER) return null
  return Math.floor(b)
}

/** Parses FOLDER:/path[:rw|:ro] lines; throws naming the bad line. */
export function parseMounts(text: string): Mount[] {
  const out: Mount[] = []
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (!line) continue
    const parts = line.split(':')
    const bad =
      parts.length < 2 || parts.length > 3 || !parts[0] || !parts[1].startsWith('/') || (parts.length === 3 && !['rw', 'ro'].includes(parts[2]))
    if (bad) throw new Error(`"${line}": write FOLDER:/path or FOLDER:/path:rw`)
    out.push({ folder: parts[0], target: parts[1], rw: parts[2] === 'rw' })
  }
  return out
}

/** Parses container ports separated by spaces or commas; throws on a bad one. */
export function parsePorts(text: string): number[] {
  const out: number[] = []
  for (const w of text.split(/[\s,]+/).filter(Boolean)) {
    const p = Number(w)
    if (!/^\d+$/.test(w) || p < 1 || p > 65535) throw new Error(`"${w}" is not a port (1–65535)`)
    if (!out.includes(p)) out.push(p)
  }
  return out
}

/** Parses K=V lines; throws naming the bad line. */
export function parseEnv(text: string): string[] {
  const out: string[] = []
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (!line) continue
    if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(line)) throw new Error(`"${line}": write NAME=value`)
    out.push(line)
  }
  return out
}

/** Splits a command line the way a shell would for simple quoting. */
export function splitCommand(s: string): string[] {
  const out: string[] = []
  let cur = ''
  let quote: string | null = null
  let any = false
  for (const ch of s) {
    if (quote) {
      if (ch === quote) quote = null
      else cur += ch
    } else if (ch === '"' || ch === "'") {
      quote = ch
      any = true
    } else if (/\s/.test(ch)) {
      if (cur || any) out.push(cur)
      cur = ''
      any = false
    } else {
      cur += ch
    }
  }
  if (quote) throw new Error('the command has an unclosed quote')
  if (cur || any) out.push(cur)
  return out
}

/** The launch form as typed. */
export interface LaunchForm {
  image: string
  gpuMode: 'count' | 'pick'
  gpus: number
  picked: number[]
  minGPUMem: string
  /** A fraction of one GPU ("0.25"), its memory cap ("20GiB"), or MIG instances by profile ("3g.40gb"). */
  gpuShare: string
  gpuMem: string
  mig: string
  cpus: string
  memory: string
  shm: string
  folders: string
  ports: string
  env: string
  cmd: string
  name: string
  restart: '' | 'on-failure'
  queue: boolean
  /** On a Slurm cluster: the partition ("" its default) and the nodes (gpus is then per node). */
  partition: string
  nodes: number
  /** The time limit as typed, on any machine ("" none). */
  time: string
}

export function emptyForm(gpus = 0): LaunchForm {
  return {
    image: '', gpuMode: 'count', gpus, picked: [], minGPUMem: '', gpuShare: '', gpuMem: '', mig: '', cpus: '', memory: '', shm: '',
    folders: '', ports: '', env: '', cmd: '', name: '', restart: '', queue: false,
    partition: '', nodes: 1, time: '',
  }
}

export type FormField = keyof LaunchForm

/**
 * The GPU count a launch starts at: 1 where there is a GPU to launch on
 * (on the chosen machine, or, with none chosen, on any machine that runs
 * jobs), else 0. A pool of GPU machines is there to give jobs GPUs.
 */
export function defaultGPUs(nodes: Pick<Node, 'id' | 'online' | 'containers' | 'gpus' | 'cluster'>[], machine = ''): number {
  const has = (n: Pick<Node, 'gpus' | 'cluster'>) => (n.gpus ?? []).length > 0 || (n.cluster?.gpus ?? []).some((g) => g.total > 0)
  if (machine) {
    const n = nodes.find((x) => x.id === machine)
    return n && has(n) ? 1 : 0
  }
  return nodes.some((n) => n.online && n.containers && has(n)) ? 1 : 0
}

/**
 * Turns the form into a Spec. Fields that do not parse are left out of the
 * spec and reported in errors, by field, so the plan can follow the rest.
 * The time limit goes in for a container and a Slurm job alike. On a Slurm
 * cluster (cluster set) the partition and nodes go in too, and with several
 * nodes the GPU count is per node.
 */
export function buildSpec(f: LaunchForm, cluster = false): { spec: Spec; errors: Partial<Record<FormField, string>> } {
  const spec: Spec = { image: f.image.trim() }
  const errors: Partial<Record<FormField, string>> = {}
  const attempt = (field: FormField, fn: () => void) => {
    try {
      fn()
    } catch (err) {
      errors[field] = (err as Error).message
    }
  }
  attempt('cmd', () => {
    const c = splitCommand(f.cmd.trim())
    if (c.length) spec.cmd = c
  })
  if (f.name.trim()) spec.name = f.name.trim()
  if (f.gpuMode === 'count') {
    const n = Number(f.gpus)
    if (!Number.isInteger(n) || n < 0) errors.gpus = 'a whole number of GPUs'
    else if (n > 0) spec.gpus = n
  } else if (f.picked.length) {
    spec.gpu_ids = [...f.picked].sort((a, b) => a - b)
  }
  shareSpec(f, spec, errors)
  const sizes: [FormField, string, (n: number) => void][] = [
    ['minGPUMem', f.minGPUMem, (n) => (spec.min_gpu_mem_bytes = n)],
    ['gpuMem', f.gpuMem, (n) => (spec.gpu_mem_bytes = n)],
    ['memory', f.memory, (n) => (spec.memory_bytes = n)],
    ['shm', f.shm, (n) => (spec.shm_bytes = n)],
  ]
  for (const [field, v, set] of sizes) {
    if (!v.trim() || errors[field]) continue
    const n = parseSize(v)
    if (n === null) errors[field] = `"${v.trim()}": write a size like 512m, 32g or 20GiB`
    else if (n > 0) set(n)
  }
  if (f.cpus.trim()) {
    const c = Number(f.cpus)
    if (!Number.isFinite(c) || c <= 0) errors.cpus = `"${f.cpus.trim()}" is not a positive number`
    else spec.cpus = c
  }
  attempt('folders', () => {
    const m = parseMounts(f.folders)
    if (m.length) spec.mounts = m
  })
  attempt('ports', () => {
    const p = parsePorts(f.ports)
    if (p.length) spec.ports = p
  })
  attempt('env', () => {
    const e = parseEnv(f.env)
    if (e.length) spec.env = e
  })
  if (f.restart) spec.restart = f.restart
  if (f.queue) spec.queue = true
  if (f.time.trim()) {
    // A container is stopped at its limit too, and the queue keeps it off reserved GPUs it would cross.
    const t = parseTimeLimit(f.time)
    if (t === null) errors.time = `"${f.time.trim()}": write 2h, 90m, 1-12:00:00 or 30:00`
    else spec.time_limit_s = t
  }
  if (cluster) clusterSpec(f, spec, errors)
  return { spec, errors }
}

/** What a MIG profile looks like: 1g.10gb, 3g.40gb, 1g.10gb+me, 1c.3g.40gb (the node checks it again). */
const migProfile = /^(?:[1-8]c\.)?[1-8]g\.[0-9]{1,4}gb(?:\+(?:me|gfx))?$/

/**
 * Puts the form's GPU share and MIG profile into spec: a share is of one
 * GPU (the count then goes), a fraction from 0.01 up to below 1; its
 * memory cap goes with it. The node decides where it fits.
 */
function shareSpec(f: LaunchForm, spec: Spec, errors: Partial<Record<FormField, string>>) {
  const share = f.gpuShare.trim()
  if (share) {
    const v = Number(share)
    if (!Number.isFinite(v) || v < 0.01 || v >= 1) errors.gpuShare = `"${share}": a share is a fraction of one GPU, from 0.01 up to below 1 (for a whole GPU, ask for 1 GPU)`
    else if (f.gpuMode === 'pick' && f.picked.length) errors.gpuShare = 'a share is of one GPU that the machine picks: clear the picked GPUs'
    else {
      spec.gpu_share = v
      delete spec.gpus
      delete spec.gpu_ids
    }
  } else if (f.gpuMem.trim()) {
    errors.gpuMem = 'a GPU memory cap goes with a share; for whole GPUs with at least this much memory, use Min GPU memory'
  }
  const mig = f.mig.trim()
  if (mig) {
    if (!migProfile.test(mig)) errors.mig = `"${mig}" is not a MIG profile (like 1g.10gb or 3g.40gb)`
    else if (share) errors.mig = 'ask for a share or MIG instances, not both'
    else spec.mig_profile = mig
  }
}

/** Puts the form's cluster fields into spec, its errors into errors. */
function clusterSpec(f: LaunchForm, spec: Spec, errors: Partial<Record<FormField, string>>) {
  delete spec.restart
  delete spec.queue // Slurm queues every job it cannot start now
  delete spec.gpu_share // the cluster places GPUs itself: whole ones
  delete spec.gpu_mem_bytes
  delete spec.mig_profile
  if (f.partition) spec.partition = f.partition
  const nodes = Number(f.nodes)
  if (!Number.isInteger(nodes) || nodes < 1) errors.nodes = 'a whole number of nodes, 1 or more'
  else if (nodes > 1) {
    spec.nodes = nodes
    if (spec.gpus) spec.gpus_per_node = spec.gpus
    delete spec.gpus
  }
}

/**
 * A job's state for people, with how an ended one ended and why a queued
 * one waits: "queued (Resources)", "exited 3", "cancelled", "timed out".
 * Mirrors the CLI's ps.
 */
export function stateText(j: Pick<Job, 'state' | 'outcome' | 'exit_code' | 'error'> & { restarts?: number }): string {
  const s = endText(j)
  // A container the engine restarted (--restart on-failure) says how often.
  return j.state !== 'queued' && j.restarts && j.restarts > 0 ? `${s}, restarted ${j.restarts}×` : s
}

function endText(j: Pick<Job, 'state' | 'outcome' | 'exit_code' | 'error'>): string {
  switch (j.state) {
    case 'queued':
      return j.error ? `queued (${j.error})` : 'queued'
    case 'exited':
    case 'failed':
      break
    default:
      return j.state
  }
  const outcomes: Record<string, string> = { cancelled: 'cancelled', timed_out: 'timed out', oom: 'killed: out of memory', node_fail: 'failed: a node failed' }
  if (j.outcome) return outcomes[j.outcome] ?? j.outcome.replaceAll('_', ' ')
  if (j.exit_code != null) return `exited ${j.exit_code}`
  return j.state
}

/** Whether a job runs on a cluster's scheduler (Slurm), not in a container of a pool machine. */
export function onCluster(j: Pick<Job, 'executor'>): boolean {
  return !!j.executor && j.executor !== 'docker'
}

/**
 * The Exit column of an ended job: its exit code, or "—" when it has none of
 * its own. A job that was cancelled or timed out was ended by a signal; Slurm
 * reports such a job's code as 0 (ExitCode 0:15), which read as "exited 0"
 * would say it succeeded.
 */
export function exitText(j: Pick<Job, 'outcome' | 'exit_code'>): string {
  if (j.exit_code == null) return '—'
  if (j.exit_code === 0 && (j.outcome === 'cancelled' || j.outcome === 'timed_out')) return '—'
  return String(j.exit_code)
}

/** An image reference as Docker stores it: docker.io/library/ left out, ":latest" made explicit. */
export function normalizeImage(ref: string): string {
  let r = ref.trim().replace(/^docker\.io\//, '').replace(/^library\//, '')
  const slash = r.lastIndexOf('/')
  if (!r.includes('@') && !r.slice(slash + 1).includes(':')) r += ':latest'
  return r
}

/** Whether two image references name the same image. */
export function sameImage(a: string, b: string): boolean {
  return normalizeImage(a) === normalizeImage(b)
}

/** Whether a job still holds or waits for resources. */
export function isActive(s: JobState): boolean {
  return s === 'queued' || s === 'starting' || s === 'running'
}

/** How long a job has run (so far), in seconds. */
export function runSeconds(j: Pick<Job, 'started' | 'finished'>, now: number): number {
  if (!j.started || j.started.startsWith('0001-')) return 0
  const start = Date.parse(j.started)
  const end = j.finished && !j.finished.startsWith('0001-') ? Date.parse(j.finished) : now
  return Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, (end - start) / 1000) : 0
}

/** A runtime that visibly ticks: "42s", "5m 03s", "2h 05m", "3d 4h". */
export function formatRuntime(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds))
  const pad = (n: number) => String(n).padStart(2, '0')
  if (s < 60) return `${s}s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m}m ${pad(s % 60)}s`
  const h = Math.floor(m / 60)
  if (h < 24) return `${h}h ${pad(m % 60)}m`
  return `${Math.floor(h / 24)}d ${h % 24}h`
}

/**
 * GPU-seconds of a job: the GPUs it counts as holding (gpu_weight: a share
 * or a MIG instance its fraction, a cluster job the cluster GPUs it asked)
 * times its time held, as the local API weighs it; for a running job the
 * wall time times that weight when that is ahead (the figure lags between
 * updates). A job from an API without gpu_weight counts its GPU indexes.
 */
export function jobGPUSeconds(j: Pick<Job, 'state' | 'started' | 'finished' | 'gpu_seconds' | 'gpu_indexes'> & { gpu_weight?: number }, now: number): number {
  const recorded = Number.isFinite(j.gpu_seconds) ? Math.max(0, j.gpu_seconds) : 0
  if (j.state !== 'running') return recorded
  const weight = j.gpu_weight !== undefined && Number.isFinite(j.gpu_weight) ? Math.max(0, j.gpu_weight) : (j.gpu_indexes?.length ?? 0)
  return Math.max(recorded, runSeconds(j, now) * weight)
}

/**
 * What a job's GPU-hours count, for the cell's tooltip: "2 GPUs × time
 * held", "0.25 of a GPU × time held" (a share, a MIG instance); "" when the
 * API did not weigh it.
 */
export function gpuWeightText(j: { gpu_weight?: number }): string {
  const w = j.gpu_weight
  if (w === undefined || !Number.isFinite(w) || w <= 0) return ''
  const n = Number.isInteger(w) ? String(w) : String(Math.round(w * 1000) / 1000)
  return `${n} ${w < 1 ? 'of a GPU' : w === 1 ? 'GPU' : 'GPUs'} × time held`
}

/** GPU-hours, for people: "0.00", "1.25", "1,234". */
export function gpuHours(seconds: number): string {
  const h = Math.max(0, Number.isFinite(seconds) ? seconds : 0) / 3600
  if (h >= 1000) return Math.round(h).toLocaleString('en-US')
  return h.toFixed(2)
}

/** How long ended jobs stay in the default view, so a stopped job does not vanish at once. */
export const recentEndMs = 10 * 60 * 1000

/**
 * The jobs shown: active ones and those ended in the last few minutes, or
 * all with all set; active first, then newest first.
 */
export function visibleJobs(list: Job[], all: boolean, now: number): Job[] {
  const keep = list.filter((j) => {
    if (all || isActive(j.state)) return true
    const end = j.finished ? Date.parse(j.finished) : NaN
    return Number.isFinite(end) && now - end < recentEndMs
  })
  const rank = (s: JobState) => (isActive(s) ? 0 : 1)
  return keep.sort((a, b) => rank(a.state) - rank(b.state) || Date.parse(b.created) - Date.parse(a.created))
}

/** Jobs shown as active in prev that a list of active jobs no longer has: they ended (or were removed). */
export function vanished(prev: Job[], active: Job[]): Job[] {
  const ids = new Set(active.map((j) => j.id))
  return prev.filter((j) => !ids.has(j.id) && isActive(j.state))
}

/**
 * Merges a fresh list of active jobs into prev: ended jobs already known and
 * recent are kept, and the records looked up for vanished jobs (null when the
 * lookup failed) take their place when they ended.
 */
export function mergeActive(prev: Job[], active: Job[], lookedUp: (Job | null)[], now: number): Job[] {
  const ids = new Set(active.map((j) => j.id))
  const found = lookedUp.filter((j): j is Job => j !== null && !ids.has(j.id) && !isActive(j.state))
  const foundIDs = new Set(found.map((j) => j.id))
  const kept = prev.filter((j) => {
    if (ids.has(j.id) || foundIDs.has(j.id) || isActive(j.state)) return false
    const end = j.finished ? Date.parse(j.finished) : NaN
    return Number.isFinite(end) && now - end < recentEndMs
  })
  return [...active, ...found, ...kept]
}

/** commandText is a job's command line as its logs panel shows it: the
 * arguments (quoted where they hold spaces), the image's default, or
 * withheld (the pool's records never hold it; its machine tells its owner
 * and the pool's admins and owners). */
export function commandText(j: Pick<Job, 'cmd_withheld' | 'spec'>): string {
  if (j.cmd_withheld) return 'command line withheld'
  const cmd = j.spec.cmd ?? []
  if (!cmd.length) return "the image's default command"
  return cmd.map((a) => (/[\s"'\\]/.test(a) || a === '' ? JSON.stringify(a) : a)).join(' ')
}

/**
 * The notice of a running job that its machine stops when a reservation of
 * its GPUs for another member starts: "stopped in 14 min: its GPUs are
 * reserved for bob from …" ("requeued in 14 min" where the machine's policy
 * puts it back into the queue), or "" for none.
 */
export function stopNotice(j: Pick<Job, 'state' | 'stop_at' | 'stop_why'>, now: number): string {
  if (j.state !== 'running' || !j.stop_at) return ''
  const at = Date.parse(j.stop_at)
  if (!Number.isFinite(at)) return ''
  const requeued = (j.stop_why ?? '').startsWith('requeued: ')
  const why = (j.stop_why ?? '').replace(/^(stopped|requeued): /, '')
  return `${requeued ? 'requeued' : 'stopped'} in ${formatDuration((at - now) / 1000)}${why ? `: ${why}` : ''}`
}
