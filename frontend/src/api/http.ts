// The transport of the UI, in a browser and in the desktop window alike:
// JSON over HTTP under /api/v1 and Server-Sent Events from /api/v1/events.
// `labpool web` serves them on loopback TCP (behind its token); the window
// serves them on its wails:// page (app/window passes them on to the
// daemon's socket), so one call is written once, here.
import { ApiError, parseErrorBody } from './errors.ts'
import { eventNames, type EventName, type EventPayloads } from './events.ts'
import type { Entry, Folder, Transfer as FolderTransfer } from './folders.ts'
import type { Image, Job, JobStats, JobsTransport, Plan, Tunnel } from './jobs.ts'
import { httpPool } from './pool.ts'
import type { Transport, Unsubscribe } from './transport.ts'
import type { GPU, History, JoinCode, JoinRequest, Node, PoolStatus, Self } from './types.ts'

const base = '/api/v1'
const timeoutMs = 8000

const unreachable = () =>
  new ApiError('Cannot reach the labpool daemon; is it running?', 'unreachable')

const mutating = (method: string) => !['GET', 'HEAD', 'OPTIONS'].includes(method.toUpperCase())

/**
 * One call of the local API under /api/v1 (path starts with "/"): JSON in,
 * JSON out, an error as ApiError with the daemon's code. The transport of the
 * browser and of the desktop window alike; API modules build on it.
 */
export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  return call<T>(method, base + path, body)
}

async function call<T>(method: string, url: string, body?: unknown): Promise<T> {
  const ctl = new AbortController()
  const timer = setTimeout(() => ctl.abort(), timeoutMs)
  let res: Response
  try {
    res = await fetch(url, {
      method,
      signal: ctl.signal,
      cache: 'no-store',
      // The page's cookie carries this run's token; `labpool web` refuses a
      // call that changes something unless it says JSON, with or without a
      // body (a form or text/plain is what other sites can send).
      credentials: 'same-origin',
      headers: body === undefined && !mutating(method) ? undefined : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  } catch {
    throw unreachable()
  } finally {
    clearTimeout(timer)
  }
  const text = await res.text().catch(() => '')
  if (!res.ok) {
    const parsed = parseErrorBody(text)
    if (parsed) throw new ApiError(parsed.message, parsed.code, res.status)
    if (res.status === 502 || res.status === 503 || res.status === 504) {
      const e = unreachable()
      throw new ApiError(e.message, e.code, res.status)
    }
    throw new ApiError(`The daemon answered ${res.status} ${res.statusText}`.trim(), 'http', res.status)
  }
  if (res.status === 204 || text.trim() === '') return undefined as T
  try {
    return JSON.parse(text) as T
  } catch {
    throw new ApiError('The daemon sent a reply that is not JSON', 'bad_reply', res.status)
  }
}

/** One shared EventSource, opened on the first subscription. */
class EventStream {
  private es: EventSource | null = null
  private listeners = new Map<string, Set<(data: unknown) => void>>()
  private connListeners = new Set<(up: boolean) => void>()
  private up = false

  subscribe(name: string, cb: (data: unknown) => void): Unsubscribe {
    let set = this.listeners.get(name)
    if (!set) this.listeners.set(name, (set = new Set()))
    set.add(cb)
    this.open()
    return () => set.delete(cb)
  }

  onConnection(cb: (up: boolean) => void): Unsubscribe {
    this.connListeners.add(cb)
    cb(this.up)
    this.open()
    return () => this.connListeners.delete(cb)
  }

  private setUp(up: boolean) {
    if (up === this.up) return
    this.up = up
    for (const cb of this.connListeners) cb(up)
  }

  private open() {
    if (this.es || typeof EventSource === 'undefined') return
    const es = new EventSource(base + '/events')
    this.es = es
    es.onopen = () => this.setUp(true)
    es.onerror = () => {
      this.setUp(false)
      // EventSource retries by itself unless the server refused outright.
      if (es.readyState === EventSource.CLOSED) {
        this.es = null
        setTimeout(() => this.open(), 3000)
      }
    }
    for (const name of eventNames) {
      es.addEventListener(name, (ev) => this.dispatch(name, (ev as MessageEvent).data))
    }
  }

  private dispatch(name: string, raw: unknown) {
    if (typeof raw !== 'string') return
    let data: unknown
    try {
      data = JSON.parse(raw)
    } catch {
      return // a malformed event is dropped, the next one will do
    }
    this.setUp(true)
    for (const cb of this.listeners.get(name) ?? []) cb(data)
  }
}

/** What the desktop window adds to the page (index.ts finds it). */
export interface DesktopWindow {
  /** Opens a URL in the system browser (the Wails runtime's BrowserOpenURL). */
  openURL(url: string): void
}

/** The window's self-test, served by app/window beside the API. */
const selfTestURL = '/window/selftest'
const daemonURL = '/window/daemon'

export function httpTransport(win?: DesktopWindow): Transport {
  const stream = new EventStream()
  return {
    kind: win ? 'wails' : 'http',
    self: () => request<Self>('GET', '/self'),
    nodes: async () => (await request<Node[] | null>('GET', '/nodes')) ?? [],
    gpus: async () => (await request<GPU[] | null>('GET', '/gpus')) ?? [],
    history: (id, seconds) =>
      request<History>('GET', `/history?node=${encodeURIComponent(id)}&seconds=${Math.round(seconds)}`),
    pool: () => request<PoolStatus>('GET', '/pool'),
    createPool: () => request<JoinCode>('POST', '/pool/create'),
    joinPool: (code, addr) => {
      const req: JoinRequest = { code }
      if (addr) req.addr = addr
      return request<PoolStatus>('POST', '/pool/join', req)
    },
    removeMember: (id) => request<void>('DELETE', `/pool/members/${encodeURIComponent(id)}`),
    ...httpJobs(win),
    ...httpPool(request),
    folders: async () => (await request<Folder[] | null>('GET', '/folders')) ?? [],
    share: (name, path, readWrite, members) => request<Folder>('POST', '/folders', { name, path, rw: readWrite, members }),
    setFolderMembers: (node, name, change) =>
      request<Folder>('PUT', `/folders/${enc(name)}/members`, { node, name, members: change.members ?? [], add: change.add ?? [], remove: change.remove ?? [] }),
    unshare: (name) => request<void>('DELETE', `/folders/${enc(name)}`),
    ls: async (node, folder, path) =>
      (await request<Entry[] | null>('GET', `/ls?node=${enc(node)}&folder=${enc(folder)}&path=${enc(path)}`)) ?? [],
    copy: (src, dst) => request<FolderTransfer>('POST', '/copy', { src, dst }),
    transfers: async () => (await request<FolderTransfer[] | null>('GET', '/transfers')) ?? [],
    selfTest: async () => {
      if (!win) return null
      const c = await call<{ enabled: boolean; job?: string; alert?: boolean }>('GET', selfTestURL)
      return c.enabled ? { job: c.job ?? '', alert: c.alert ?? false } : null
    },
    selfTestReport: (report) => call<void>('POST', selfTestURL, JSON.parse(report)),
    canStartDaemon: async () => {
      if (!win) return false // a browser cannot start this machine's daemon
      return (await call<{ can_start: boolean }>('GET', daemonURL)).can_start
    },
    startDaemon: () => call<void>('POST', daemonURL),
    on<E extends EventName>(name: E, cb: (data: EventPayloads[E]) => void): Unsubscribe {
      return stream.subscribe(name, (d) => cb(d as EventPayloads[E]))
    },
    onConnection: (cb) => stream.onConnection(cb),
  }
}

const enc = encodeURIComponent

function httpJobs(win?: DesktopWindow): JobsTransport {
  return {
    jobs: async (all) => (await request<Job[] | null>('GET', all ? '/jobs?all=1' : '/jobs')) ?? [],
    job: (id) => request<Job>('GET', `/jobs/${enc(id)}`),
    plan: (req) => request<Plan>('POST', '/jobs/plan', req),
    launch: (req) => request<Job>('POST', '/jobs', req),
    stopJob: (id) => request<Job>('POST', `/jobs/${enc(id)}/stop`),
    removeJob: (id, force) => request<void>('DELETE', `/jobs/${enc(id)}${force ? '?force=1' : ''}`),
    jobStats: (id) => request<JobStats>('GET', `/jobs/${enc(id)}/stats`),
    openJob: async (id, port) => {
      const t = await request<Tunnel>('POST', `/jobs/${enc(id)}/open`, { port })
      win?.openURL(t.url) // a browser opens the tab itself (OpenPortDialog)
      return t
    },
    tunnels: async () => (await request<Tunnel[] | null>('GET', '/tunnels')) ?? [],
    images: async (node) => (await request<Image[] | null>('GET', `/images?node=${enc(node)}`)) ?? [],
    followLogs(id, tail, onText) {
      const ctl = new AbortController()
      void (async () => {
        try {
          const res = await fetch(`${base}/jobs/${enc(id)}/logs?follow=1&tail=${tail}`, { signal: ctl.signal, credentials: 'same-origin' })
          if (!res.ok || !res.body) {
            const parsed = parseErrorBody(await res.text().catch(() => ''))
            onText(`\n[${parsed?.message ?? 'logs unavailable: ' + res.status}]\n`, true)
            return
          }
          const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
          for (;;) {
            const { value, done } = await reader.read()
            if (done) break
            if (value) onText(value, false)
          }
          onText('', true)
        } catch {
          if (!ctl.signal.aborted) onText('\n[the log stream broke]\n', true)
        }
      })()
      return () => ctl.abort()
    },
  }
}
