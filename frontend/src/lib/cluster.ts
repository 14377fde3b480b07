// Pure helpers over a Slurm cluster in the pool (Node.cluster): its card,
// its machine view and the launch dialog's cluster fields. The cluster's
// agent reads the figures; the Service's plan (slurm.Plan) decides whether
// a job fits and counts the GPUs free (Node.cluster_usable); these only
// word and order what they say.
import { formatAgo, formatDuration, isZeroTime } from './format.ts'
import type { Cluster, ClusterGPUs, ClusterPartition, ClusterQueueJob, Node } from '../api/types.ts'

/** GPUs of some counts, summed: total, allocated and free. */
export function gpuSum(counts: readonly ClusterGPUs[] | null | undefined): { total: number; alloc: number; free: number } {
  let total = 0
  let alloc = 0
  for (const g of counts ?? []) {
    total += g.total
    alloc += Math.min(g.alloc, g.total)
  }
  return { total, alloc, free: total - alloc }
}

/** A GPU type for people ("" is Slurm's untyped "gpu"). */
export const gpuType = (g: Pick<ClusterGPUs, 'type'>) => g.type || 'gpu'

/** GPUs by type, allocated of total: "a100 3/4 · h100 0/8"; "no GPU". */
export function gpuText(counts: readonly ClusterGPUs[] | null | undefined): string {
  const gs = counts ?? []
  if (!gs.length) return 'no GPU'
  return gs.map((g) => `${gpuType(g)} ${g.alloc}/${g.total}`).join(' · ')
}

/**
 * How a partition's or node's state (sinfo's words, with flags such as
 * "mixed+drain" or "idle*") reads: ok (takes jobs), warn (draining, or
 * busy to the last GPU), bad (down, drained, failed, not responding).
 */
export function stateTone(state: string): 'ok' | 'warn' | 'bad' {
  const s = state.toLowerCase()
  if (/down|fail|drained|inactive|not_responding|unknown|inval/.test(s) || s.endsWith('*')) return 'bad'
  if (/drain|maint|reserved|power|completing|allocated/.test(s)) return 'warn'
  return 'ok'
}

/** Whether a machine stands for a Slurm cluster. */
export const isCluster = (n: Pick<Node, 'cluster'>): n is { cluster: Cluster } => !!n.cluster

/**
 * Who a queue entry is for: the member who launched it through labpool (the
 * Service names only those the cluster's own job records vouch for), or
 * else Slurm's user, marked as such.
 */
export function queueOwner(n: Pick<Node, 'cluster_owners'>, q: Pick<ClusterQueueJob, 'owner' | 'user'>): { name: string; labpool: boolean } {
  const member = q.owner ? n.cluster_owners?.[q.owner] : undefined
  if (member) return { name: member, labpool: true }
  return { name: q.user || '—', labpool: false }
}

/** Why a pending job waits, for people ("None" and empty say nothing). */
export function pendingReason(q: Pick<ClusterQueueJob, 'state' | 'reason'>): string {
  const r = q.reason ?? ''
  return r && r !== 'None' ? r : ''
}

/** The first n entries of the queue, running first, then pending, as Slurm listed them. */
export function queueShown(c: Pick<Cluster, 'queue'>, n: number): ClusterQueueJob[] {
  const q = c.queue ?? []
  const running = q.filter((j) => j.state.toUpperCase() === 'RUNNING')
  const rest = q.filter((j) => j.state.toUpperCase() !== 'RUNNING')
  return [...running, ...rest].slice(0, n)
}

/** How the cluster runs images, or that it runs command jobs only. */
export function runtimeNote(c: Pick<Cluster, 'containers'>, name: string): string {
  const rt = c.containers ?? []
  if (!rt.length) return `${name} runs command jobs only (no pyxis, no Apptainer): leave the image empty and give a command.`
  const words: Record<string, string> = { pyxis: 'pyxis (srun --container-image)', apptainer: 'Apptainer' }
  return `${name} runs images through ${rt.map((r) => words[r] ?? r).join(' or ')}; without an image, the command runs as it is.`
}

/** A partition in the launch dialog's select: "gpu (default) · a100 3/8 · up to 2-00:00:00". */
export function partitionLabel(p: ClusterPartition): string {
  const parts = [p.default ? `${p.name} (default)` : p.name]
  if (p.state && p.state.toLowerCase() !== 'up') parts.push(p.state)
  parts.push(gpuText(p.gpus))
  if (p.max_time_s) parts.push(`up to ${formatTimeLimit(p.max_time_s)}`)
  return parts.join(' · ')
}

/**
 * Reads a time limit as `labpool run --time` does (slurm.ParseTimeLimit): a
 * Go-style duration ("2h", "90m", "1h30m") or Slurm's forms ("90" minutes,
 * "30:00", "2:00:00", "1-12", "1-12:00:00"); seconds, or null.
 */
export function parseTimeLimit(s: string): number | null {
  const in_ = s.trim()
  if (/^(\d+(\.\d+)?(h|m|s|ms))+$/.test(in_)) {
    let secs = 0
    for (const [, n, unit] of in_.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) {
      secs += Number(n) * { h: 3600, m: 60, s: 1, ms: 0.001 }[unit as 'h' | 'm' | 's' | 'ms']
    }
    return secs > 0 ? Math.ceil(secs) : null
  }
  const m = /^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$/.exec(in_)
  if (!m) return null
  const [, d, a, b, c] = m
  const n = (x: string | undefined) => (x === undefined ? 0 : Number(x))
  let secs: number
  if (d !== undefined) secs = n(d) * 86400 + n(a) * 3600 + n(b) * 60 + n(c)
  else if (c !== undefined) secs = n(a) * 3600 + n(b) * 60 + n(c)
  else if (b !== undefined) secs = n(a) * 60 + n(b)
  else secs = n(a) * 60
  return secs > 0 ? secs : null
}

/** A time limit as sbatch's --time writes it: "2:00:00", "1-12:00:00". */
/**
 * What an empty time limit means on a partition, short enough for the
 * dialog's field: the partition's default, else its maximum (what Slurm
 * gives a job that names none), else no limit. An example of the format
 * follows where it fits.
 */
export function timeLimitHint(p: Pick<ClusterPartition, 'default_time_s' | 'max_time_s'> | null | undefined): string {
  if (p?.default_time_s) return `default ${formatTimeLimit(p.default_time_s)}`
  if (p?.max_time_s) return `max ${formatTimeLimit(p.max_time_s)}`
  return 'none · e.g. 2h'
}

export function formatTimeLimit(seconds: number): string {
  const t = Math.ceil(seconds)
  const pad = (x: number) => String(x).padStart(2, '0')
  const days = Math.floor(t / 86400)
  const hms = `${Math.floor((t % 86400) / 3600)}:${pad(Math.floor((t % 3600) / 60))}:${pad(t % 60)}`
  return days > 0 ? `${days}-${pad(Math.floor((t % 86400) / 3600))}:${pad(Math.floor((t % 3600) / 60))}:${pad(t % 60)}` : hms
}

/**
 * When the card's figures were read, said truthfully: the card is written
 * again only when a read changes something (slurm.Card keeps the time of
 * the reading that changed it), so on a live cluster polled every few
 * seconds its time is the last change, not the last read. Offline, the
 * figures are the last known ones, from that time at the latest.
 */
export function readText(c: Pick<Cluster, 'read'>, online: boolean, now: number): string {
  if (isZeroTime(c.read)) return 'not read yet'
  if (!online) return `last known, read ${formatAgo(c.read, now)} or later`
  const for_ = (now - Date.parse(c.read)) / 1000
  return for_ < 1 ? 'read just now' : `unchanged for ${formatDuration(for_)}`
}
