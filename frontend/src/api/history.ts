// History of a machine (GET /api/v1/history/series) and of the pool's GPUs
// (GET /api/v1/history/pool), read from the local replica. The last answer
// of each query is kept (in memory, and the newest few in localStorage) so
// a view opens at once and still shows something, marked stale, when the
// daemon cannot answer.
import { toApiError } from './errors.ts'
import { request } from './http.ts'
import type { PoolSeries, Series } from './types.gen.ts'

export type { PoolSeries, Series }

/** A query of a machine's history: the since seconds that end at until (unix s; 0 = now). */
export interface SeriesQuery {
  node: string
  /** The GPU's index; null for the host. */
  gpu: number | null
  since: number
  until: number
}

/** An answer, fresh from the daemon or the last one kept (stale, with why). */
export interface Answer<T> {
  value: T
  stale: boolean
  error: string
  /** When the value was fetched (ms). */
  fetchedAt: number
}

const keep = new Map<string, Answer<unknown>>()
const storeKey = 'labpool:history-cache'
const storeMax = 4
const storeMaxChars = 1_000_000

export function seriesPath(q: SeriesQuery): string {
  const p = new URLSearchParams({ node: q.node, since: String(Math.round(q.since)) })
  if (q.gpu != null) p.set('gpu', String(q.gpu))
  if (q.until > 0) p.set('until', String(Math.round(q.until)))
  return `/history/series?${p}`
}

export function poolPath(since: number): string {
  return `/history/pool?since=${Math.round(since)}`
}

/** The answer kept for path, if any (from memory, else from localStorage). */
export function kept<T>(path: string): Answer<T> | null {
  const a = keep.get(path) ?? loadStored(path)
  return a ? ({ ...a, stale: true } as Answer<T>) : null
}

/**
 * Fetches path; on failure answers the kept value marked stale with the
 * error, or throws when nothing is kept.
 */
export async function cached<T>(path: string): Promise<Answer<T>> {
  try {
    const value = await request<T>('GET', path)
    const a: Answer<T> = { value, stale: false, error: '', fetchedAt: Date.now() }
    keep.set(path, a)
    store(path, a)
    return a
  } catch (err) {
    const old = kept<T>(path)
    if (!old) throw err
    return { ...old, error: toApiError(err).message }
  }
}

export const fetchSeries = (q: SeriesQuery) => cached<Series>(seriesPath(q))
export const fetchPool = (since: number) => cached<PoolSeries>(poolPath(since))

function loadStored(path: string): Answer<unknown> | null {
  try {
    const all = JSON.parse(localStorage.getItem(storeKey) ?? '[]') as [string, Answer<unknown>][]
    const hit = all.find(([p]) => p === path)
    return hit ? hit[1] : null
  } catch {
    return null
  }
}

/** Keeps the newest few small answers across reloads (a cache: failures are ignored). */
function store(path: string, a: Answer<unknown>) {
  try {
    const text = JSON.stringify(a)
    if (text.length > storeMaxChars) return
    const all = (JSON.parse(localStorage.getItem(storeKey) ?? '[]') as [string, Answer<unknown>][]).filter(([p]) => p !== path)
    all.unshift([path, a])
    localStorage.setItem(storeKey, JSON.stringify(all.slice(0, storeMax)))
  } catch {
    // no storage or full
  }
}
