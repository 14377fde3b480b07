// The jobs' live state: every job of the pool from "jobs:changed" events,
// with a poll every 2 s when no event came, the open tunnels, and the last
// known list kept for when the daemon cannot be reached.
import { EventJobs, toApiError, type Job, type Transport, type Tunnel } from './api/index.ts'
import { mergeActive, vanished, visibleJobs } from './lib/jobs.ts'

const pollAfterMs = 2000
const cacheKey = 'labpool:last-jobs'
const maxLookups = 10 // jobs that left the active list, looked up one by one

export class JobsBoard {
  /** Every job known: all of them after an event or an "all" poll. */
  list = $state.raw<Job[]>([])
  /** Show ended jobs too. */
  all = $state(false)
  error = $state('')
  loaded = $state(false)
  /** True while the list comes from the browser's cache of an earlier visit. */
  fromCache = $state(false)
  tunnels = $state.raw<Tunnel[]>([])

  private t: Transport
  private lastEvent = 0
  private lastPoll = 0
  private polling = false
  private lastCacheWrite = 0
  private stops: (() => void)[] = []

  constructor(t: Transport) {
    this.t = t
  }

  /** The rows to show at time now. */
  visible(now: number): Job[] {
    return visibleJobs(this.list, this.all, now)
  }

  get counts(): { running: number; queued: number } {
    let running = 0
    let queued = 0
    for (const j of this.list) {
      if (j.state === 'running' || j.state === 'starting') running++
      else if (j.state === 'queued') queued++
    }
    return { running, queued }
  }

  start(): void {
    this.loadCache()
    this.stops.push(
      this.t.on(EventJobs, (js) => {
        this.lastEvent = Date.now()
        this.set(js ?? [])
      }),
    )
    const timer = setInterval(() => this.tick(), 500)
    this.stops.push(() => clearInterval(timer))
    void this.refresh()
    void this.refreshTunnels()
  }

  stop(): void {
    for (const s of this.stops.splice(0)) s()
  }

  setAll(all: boolean): void {
    this.all = all
    void this.refresh()
  }

  /** Puts one job's new record in the list (after launch or stop). */
  upsert(j: Job): void {
    const i = this.list.findIndex((x) => x.id === j.id)
    this.list = i < 0 ? [j, ...this.list] : this.list.map((x, k) => (k === i ? { ...x, ...j } : x))
  }

  drop(id: string): void {
    this.list = this.list.filter((j) => j.id !== id)
    this.tunnels = this.tunnels.filter((t) => t.job !== id)
  }

  tunnelsOf(id: string): Tunnel[] {
    return this.tunnels.filter((t) => t.job === id)
  }

  addTunnel(t: Tunnel): void {
    this.tunnels = [...this.tunnels.filter((x) => !(x.job === t.job && x.port === t.port)), t]
  }

  async refreshTunnels(): Promise<void> {
    try {
      this.tunnels = await this.t.tunnels()
    } catch {
      // no tunnels yet, or an older daemon: the Open button still works
    }
  }

  private tick() {
    const now = Date.now()
    if (now - this.lastEvent >= pollAfterMs && now - this.lastPoll >= pollAfterMs) void this.refresh()
  }

  async refresh(): Promise<void> {
    if (this.polling) return
    this.polling = true
    this.lastPoll = Date.now()
    const all = this.all
    try {
      const got = await this.t.jobs(all)
      if (all) this.set(got)
      else await this.mergeActive(got)
    } catch (err) {
      this.error = toApiError(err).message
    } finally {
      this.polling = false
    }
  }

  private set(list: Job[]) {
    this.list = list
    this.error = ''
    this.loaded = true
    this.fromCache = false
    this.saveCache()
  }

  /**
   * Merges a list of active jobs: ended jobs still shown are kept, and jobs
   * that were active but are no longer listed are looked up, so a job that
   * just ended shows how it ended instead of vanishing.
   */
  private async mergeActive(active: Job[]) {
    const gone = this.fromCache ? [] : vanished(this.list, active)
    const ended = await Promise.all(gone.slice(0, maxLookups).map((j) => this.t.job(j.id).catch(() => null)))
    this.set(mergeActive(this.list, active, ended, Date.now()))
  }

  private loadCache() {
    try {
      const raw = localStorage.getItem(cacheKey)
      if (!raw || this.list.length) return
      const v: unknown = JSON.parse(raw)
      if (!Array.isArray(v)) return
      this.list = (v as Job[]).filter((j) => j && typeof j.id === 'string').map((j) => ({ ...j, stale: true }))
      this.fromCache = this.list.length > 0
    } catch {
      // no storage, or garbage in it: start empty
    }
  }

  private saveCache() {
    const now = Date.now()
    if (now - this.lastCacheWrite < 5000) return
    this.lastCacheWrite = now
    try {
      localStorage.setItem(cacheKey, JSON.stringify(this.list.slice(0, 300)))
    } catch {
      // storage full or disabled: the cache is only a convenience
    }
  }
}
