// The desktop window's self-test: when the window asks for it, wait for the
// dashboard to render a node card with its meters, count the live events
// that reach the page, follow a job's log when the window names one, then
// report what the DOM shows and what arrived, read back from the page itself.
import { EventAlerts, EventNodes, EventSample, request, type Transport } from './api/index.ts'
import type { Version } from './api/types.gen.ts'

export interface SelfTestSummary {
  cards: number
  names: string[]
  gpuMeters: number
  cpuValues: number[]
  title: string
  text: string
  /** The transport's kind ("wails" in the window). */
  kind: string
  /** Whether the Wails runtime can open the system browser (Transport.openJob uses it). */
  browserOpen: boolean
  /** The daemon's build, asked with the API's request helper alone (GET /api/v1/version). */
  daemonVersion: string
  /** Live events received, by name, since the page subscribed. */
  events: Record<string, number>
  /** The most events of one name within any one second. */
  eventsMaxPerSecond: Record<string, number>
  /** The followed log: the job, its pieces as they arrived, and any error. */
  log?: { job: string; chunks: { ms: number; text: string }[]; ended: boolean; error?: string }
  /** The Alerts tab's count of active alerts when the window was asked to wait for one (-1: none within the time). */
  alertsCount?: number
}

/** Reads the rendered part of the summary from the page. */
export function summarize(doc: Document): Pick<SelfTestSummary, 'cards' | 'names' | 'gpuMeters' | 'cpuValues' | 'title' | 'text'> {
  const cards = [...doc.querySelectorAll<HTMLElement>('[data-testid="node-card"]')]
  const cpuValues = [...doc.querySelectorAll<HTMLElement>('[data-testid="node-card"] [data-testid="cpu-meter"]')]
    .map((el) => el.dataset.value ?? '')
    .filter((v) => v !== '')
    .map(Number)
  return {
    cards: cards.length,
    names: cards.map((c) => c.dataset.nodeName ?? ''),
    gpuMeters: doc.querySelectorAll('[data-testid="gpu-meter"]').length,
    cpuValues,
    title: doc.title,
    text: (doc.body?.innerText ?? '').slice(0, 500),
  }
}

function rendered(doc: Document): boolean {
  for (const m of doc.querySelectorAll<HTMLElement>('[data-testid="node-card"] [data-testid="cpu-meter"]')) {
    if (m.dataset.value) return true
  }
  return false
}

/** The most timestamps (ms) within any window of one second. */
export function maxPerSecond(times: number[]): number {
  let most = 0
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i] - times[j] >= 1000) j++
    most = Math.max(most, i - j + 1)
  }
  return most
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Follows job's log (found by name or ID) until two pieces arrived or timeoutMs. */
async function followLog(api: Transport, job: string, timeoutMs: number): Promise<SelfTestSummary['log']> {
  const log: NonNullable<SelfTestSummary['log']> = { job, chunks: [], ended: false }
  const deadline = Date.now() + timeoutMs
  let id = ''
  while (!id && Date.now() < deadline) {
    try {
      id = (await api.jobs(false)).find((j) => (j.name === job || j.id === job) && j.state === 'running')?.id ?? ''
    } catch (err) {
      log.error = String(err)
    }
    if (!id) await sleep(500)
  }
  if (!id) {
    log.error = `no running job ${job} in ${timeoutMs} ms` + (log.error ? `: ${log.error}` : '')
    return log
  }
  delete log.error
  const t0 = performance.now()
  // tail 0: only lines written from now on, so each piece proves the stream live.
  const stop = api.followLogs(id, 0, (text, eof) => {
    if (text) log.chunks.push({ ms: Math.round(performance.now() - t0), text: text.slice(0, 200) })
    if (eof) log.ended = true
  })
  while (log.chunks.length < 2 && !log.ended && Date.now() < deadline) await sleep(100)
  stop()
  return log
}

/** Waits for the Alerts tab's count of active alerts; -1 when none showed within timeoutMs. */
async function alertBadge(timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const badge = document.querySelector<HTMLElement>('[data-testid="alerts-count"]')
    if (badge) return Number(badge.innerText)
    if (Date.now() >= deadline) return -1
    await sleep(200)
  }
}

/** Runs the self-test if the window asks for it; never throws. */
export async function runSelfTest(api: Transport, timeoutMs = 15000): Promise<void> {
  let config: Awaited<ReturnType<Transport['selfTest']>> = null
  try {
    config = await api.selfTest()
  } catch {
    return
  }
  if (!config) return
  const times: Record<string, number[]> = {}
  const count = (name: string) => () => (times[name] ??= []).push(performance.now())
  const offs = [api.on(EventSample, count(EventSample)), api.on(EventNodes, count(EventNodes)), api.on(EventAlerts, count(EventAlerts))]
  const deadline = Date.now() + timeoutMs
  while (!rendered(document) && Date.now() < deadline) await sleep(200)
  // A few more live samples, so the sparklines in the screenshot have a line.
  await sleep(4000)
  const log = config.job ? await followLog(api, config.job, 30000) : undefined
  const alertsCount = config.alert ? await alertBadge(30000) : undefined
  for (const off of offs) off()
  await new Promise((r) => requestAnimationFrame(() => r(null)))
  // A call with no code of its own in the transport or the window: the
  // route, its generated type and this line are all it takes.
  const daemonVersion = await request<Version>('GET', '/version').then((v) => v.version, (err) => `error: ${err}`)
  const summary: SelfTestSummary = {
    ...summarize(document),
    kind: api.kind,
    browserOpen: typeof window.runtime?.BrowserOpenURL === 'function',
    daemonVersion,
    events: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, v.length])),
    eventsMaxPerSecond: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, maxPerSecond(v)])),
    log,
    alertsCount,
  }
  try {
    await api.selfTestReport(JSON.stringify(summary))
  } catch (err) {
    console.error('self-test report failed', err)
  }
}
