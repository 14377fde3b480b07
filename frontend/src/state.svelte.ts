// The dashboard's live state: the pool view from events (with a poll
// fallback), the 5-minute series per node, and whether what is shown is
// live or last known.
import {
  EventNodes,
  EventSample,
  toApiError,
  type Node,
  type PoolStatus,
  type Sample,
  type Self,
  type Transport,
} from './api/index.ts'
import { allPeersOffline, daemonStoppedMessage, fromStoppedDaemon, normalizeNode, sortNodes } from './lib/nodes.ts'
import { mergeWindow, toPoint, windowSeconds, type Point } from './lib/series.ts'

const pollAfterMs = 2000 // poll when no pool:nodes event arrived for this long
const staleAfterMs = 5000 // no fresh data for this long: show last known state
const poolEveryMs = 5000
const historyRetryMs = 15000 // refetch history of a node that sends no samples
const cacheKey = 'labpool:last-state'

/** What the browser keeps of the last visit, shown while the daemon is unreachable. */
interface Cache {
  savedAt: number
  self: Self | null
  nodes: Node[]
  series: Record<string, Point[]>
}

export class Dashboard {
  self = $state<Self | null>(null)
  nodes = $state.raw<Node[]>([])
  pool = $state<PoolStatus | null>(null)
  series = $state.raw<Record<string, Point[]>>({})
  now = $state(Date.now())
  /** Why the local daemon could not be reached, or null. */
  daemonError = $state<string | null>(null)
  /** When the pool view was last refreshed from the daemon (ms), 0 if never. */
  lastUpdate = $state(0)
  /** True while the cards come from the browser's cache of an earlier visit. */
  fromCache = $state(false)
  streamUp = $state(false)
  /** Whether this page can start the stopped daemon (the desktop window). */
  canStart = $state(false)
  starting = $state(false)
  startError = $state('')

  private t: Transport
  private lastEvent = 0
  private lastPoll = 0
  private lastPool = 0
  private lastSelf = 0
  private polling = false
  private lastCacheWrite = 0
  private history = new Map<string, { fetched: number; inFlight: boolean; lastSample: number }>()
  private stops: (() => void)[] = []

  constructor(t: Transport) {
    this.t = t
  }

  /** Whether the page shows last known rather than live state. */
  get stale(): boolean {
    return this.daemonStale || allPeersOffline(this.nodes)
  }

  /** Whether this machine's own daemon is unreachable or silent. */
  get daemonStale(): boolean {
    if (this.daemonError) return true
    if (this.fromCache) return true
    return this.lastUpdate > 0 && this.now - this.lastUpdate > staleAfterMs
  }

  get staleReason(): string {
    if (this.daemonError) return this.daemonError
    if (this.fromCache) return 'Waiting for the labpool daemon…'
    if (this.daemonStale) return 'No update from the labpool daemon for a while.'
    if (allPeersOffline(this.nodes)) return 'All other machines of the pool are offline.'
    return ''
  }

  start(): void {
    this.loadCache()
    this.stops.push(this.t.on(EventNodes, (ns) => this.onNodes(ns ?? [], true)))
    this.stops.push(this.t.on(EventSample, (s) => this.onSample(s)))
    this.stops.push(this.t.onConnection((up) => (this.streamUp = up)))
    const timer = setInterval(() => this.tick(), 1000)
    this.stops.push(() => clearInterval(timer))
    void this.refreshSelf()
    void this.refreshPool()
    void this.poll()
  }

  stop(): void {
    for (const s of this.stops.splice(0)) s()
  }

  async refreshSelf(): Promise<void> {
    this.lastSelf = Date.now()
    try {
      this.self = await this.t.self()
    } catch (err) {
      this.noteError(err)
    }
  }

  async refreshPool(): Promise<void> {
    this.lastPool = Date.now()
    try {
      this.pool = await this.t.pool()
    } catch (err) {
      this.noteError(err)
    }
  }

  private async checkCanStart() {
    try {
      this.canStart = await this.t.canStartDaemon()
    } catch {
      this.canStart = false
    }
  }

  /** Starts this machine's daemon again (the window's Start button). */
  async startDaemon(): Promise<void> {
    if (this.starting) return
    this.starting = true
    this.startError = ''
    try {
      await this.t.startDaemon()
      await Promise.all([this.poll(), this.refreshSelf(), this.refreshPool()])
    } catch (err) {
      this.startError = toApiError(err).message
    } finally {
      this.starting = false
    }
  }

  private tick() {
    this.now = Date.now()
    if (this.now - this.lastEvent >= pollAfterMs && this.now - this.lastPoll >= pollAfterMs) void this.poll()
    if (this.now - this.lastPool >= poolEveryMs) void this.refreshPool()
    if (!this.self && this.now - this.lastSelf >= poolEveryMs) void this.refreshSelf()
  }

  private async poll() {
    if (this.polling) return
    this.polling = true
    this.lastPoll = Date.now()
    try {
      this.onNodes(await this.t.nodes(), false)
    } catch (err) {
      this.noteError(err)
    } finally {
      this.polling = false
    }
  }

  private noteError(err: unknown) {
    const e = toApiError(err)
    // Only a failure to reach the daemon makes the whole page stale; other
    // errors (e.g. not in a pool) belong to the action that caused them.
    if (e.unreachable) {
      if (!this.daemonError) void this.checkCanStart()
      this.daemonError = e.message
    }
    else if (e.status >= 500) this.daemonError = `The labpool daemon reported an error: ${e.message}`
  }

  private onNodes(list: Node[], fromEvent: boolean) {
    const now = Date.now()
    if (fromEvent) this.lastEvent = now
    const wasOnline = new Map(this.nodes.map((n) => [n.id, n.online]))
    if (fromStoppedDaemon(list)) {
      // The replica's last known pool, served while the daemon is stopped:
      // shown offline, and the page keeps saying the daemon is stopped.
      this.nodes = sortNodes(list.map(normalizeNode))
      if (!this.daemonError) {
        this.daemonError = daemonStoppedMessage
        void this.checkCanStart()
      }
      this.fromCache = false
      return
    }
    this.nodes = sortNodes(list.map(normalizeNode))
    this.lastUpdate = now
    this.daemonError = null
    this.fromCache = false
    if (!this.self && now - this.lastSelf >= pollAfterMs) void this.refreshSelf()
    this.saveCache(now)
    // A node back online has history we missed while it (or we) was away:
    // fetch its window again so the graph fills the gap.
    for (const n of this.nodes) this.maybeFetchHistory(n.id, now, n.online && wasOnline.get(n.id) === false)
  }

  private onSample(s: Sample) {
    const p = toPoint(s)
    if (!p || !s.node) return
    const h = this.history.get(s.node)
    if (h) h.lastSample = Date.now()
    this.addPoints(s.node, [p])
  }

  private addPoints(id: string, ps: Point[]) {
    const cur = this.series[id] ?? []
    this.series = { ...this.series, [id]: mergeWindow(cur, ps, windowSeconds) }
  }

  private maybeFetchHistory(id: string, now: number, force = false) {
    let h = this.history.get(id)
    if (!h) this.history.set(id, (h = { fetched: 0, inFlight: false, lastSample: 0 }))
    if (h.inFlight) return
    const due = force || h.fetched === 0 || (now - h.lastSample > historyRetryMs && now - h.fetched > historyRetryMs)
    if (!due) return
    h.inFlight = true
    const rec = h
    this.t
      .history(id, windowSeconds)
      .then((hist) => {
        const ps = (hist.samples ?? []).map(toPoint).filter((p): p is Point => p !== null)
        if (ps.length) this.addPoints(id, ps)
      })
      .catch(() => {
        // a node without history yet: the live samples will fill the graph
      })
      .finally(() => {
        rec.inFlight = false
        rec.fetched = Date.now()
      })
  }

  private loadCache() {
    try {
      const raw = localStorage.getItem(cacheKey)
      if (!raw) return
      const c = JSON.parse(raw) as Partial<Cache>
      if (!Array.isArray(c.nodes) || c.nodes.length === 0 || this.nodes.length > 0) return
      this.nodes = sortNodes(c.nodes.map((n) => ({ ...normalizeNode(n), online: false, stale: true })))
      if (c.self && !this.self) this.self = c.self
      if (c.series && typeof c.series === 'object') this.series = c.series
      if (typeof c.savedAt === 'number') this.lastUpdate = c.savedAt
      this.fromCache = true
    } catch {
      // no storage, or garbage in it: start empty
    }
  }

  private saveCache(now: number) {
    if (now - this.lastCacheWrite < 5000) return
    this.lastCacheWrite = now
    try {
      const c: Cache = { savedAt: now, self: this.self, nodes: this.nodes, series: this.series }
      localStorage.setItem(cacheKey, JSON.stringify(c))
    } catch {
      // storage full or disabled: the cache is only a convenience
    }
  }
}
