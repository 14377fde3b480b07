// What a GPU's sample says of its health and processes, read defensively:
// a daemon older than the health fields sends none (health then reads "").

/** A GPU's health as the card and the machine view show it. */
export interface Health {
  /** "ok", "warning", "quarantined", "lost", or "" when not reported. */
  state: string
  reason: string
  throttle: string[]
  /** The labpool job holding the GPU (its ID), "" when free. */
  job: string
  /** What a person reads for it: the job's name, or its short ID until its record arrives. */
  jobName: string
  /** The job's owner's member name, "" when unknown. */
  jobOwner: string
  /** A scheduler's job holding it ("slurm job 123"), with job when labpool launched it, alone when not. */
  holder: string
}

/** One process on a GPU. */
export interface Proc {
  pid: number
  memBytes: number
  job: string
  /** The job's name when known (the GPU's job), else its short ID. */
  jobName: string
  owner: string
  /** The Slurm job it runs in ("slurm job 123"), "" when none. */
  holder: string
  /** In no labpool job and no Slurm job: it keeps the GPU busy all the same. */
  outside: boolean
}

type Loose = Record<string, unknown>

const str = (v: unknown) => (typeof v === 'string' ? v : '')
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

export function gpuHealth(g: object): Health {
  const o = g as Loose
  const throttle = Array.isArray(o.throttle) ? o.throttle.filter((t): t is string => typeof t === 'string') : []
  const job = str(o.job)
  return { state: str(o.health), reason: str(o.health_reason), throttle, job, jobName: jobName(o, job), jobOwner: str(o.job_owner_name), holder: str(o.holder) }
}

/** A job's name when it is the GPU's job and its record named it, else its short ID. */
function jobName(gpu: Loose, job: string): string {
  if (job && job === str(gpu.job) && str(gpu.job_name)) return str(gpu.job_name)
  return job.slice(0, 12)
}

/** The GPU's processes (app.GPU's process_list), biggest memory first; [] when only a count is known. */
export function gpuProcesses(g: object): Proc[] {
  const o = g as Loose
  const list = Array.isArray(o.process_list) ? o.process_list : o.processes
  if (!Array.isArray(list)) return []
  return list
    .filter((p): p is Loose => !!p && typeof p === 'object')
    .map((p) => {
      const job = str(p.job)
      const holder = str(p.holder)
      return { pid: num(p.pid), memBytes: num(p.mem_bytes), job, jobName: jobName(o, job), owner: str(p.owner), holder, outside: !job && !holder }
    })
    .sort((a, b) => b.memBytes - a.memBytes || a.pid - b.pid)
}

/** The number of processes, from a list or a count. */
export function processCount(g: object): number {
  const o = g as Loose
  if (Array.isArray(o.process_list)) return o.process_list.length
  return Array.isArray(o.processes) ? o.processes.length : num(o.processes)
}

/** How the card shows a health state: its badge class and words. */
export function healthBadge(state: string): { cls: string; text: string } | null {
  switch (state) {
    case 'warning':
      return { cls: 'stale', text: 'warning' }
    case 'quarantined':
      return { cls: 'failed', text: 'quarantined' }
    case 'lost':
      return { cls: 'failed', text: 'lost' }
    case 'ok':
      return { cls: 'online', text: 'ok' }
    default:
      return null
  }
}
