// History of a machine (GET /api/v1/history/series) and of the pool's GPUs
// (GET /api/v1/history/pool), read from the local replica. The last answers
// are kept (lib/answers.ts) so a view opens at once and still shows
// something, marked stale, when the daemon cannot answer.
import { toApiError } from './errors.ts'
import { request } from './http.ts'
import type { PoolSeries, Series } from './types.gen.ts'
import { Answers, type Answer } from '../lib/answers.ts'

export type { Answer, PoolSeries, Series }

/** A query of a machine's history: the since seconds that end at until (unix s; 0 = now). */
export interface SeriesQuery {
  node: string
  /** The GPU's index; null for the host. */
  gpu: number | null
  since: number
  until: number
}

const answers = new Answers(typeof localStorage === 'undefined' ? null : localStorage)

export function seriesPath(q: SeriesQuery): string {
  const p = new URLSearchParams({ node: q.node, since: String(Math.round(q.since)) })
  if (q.gpu != null) p.set('gpu', String(q.gpu))
  if (q.until > 0) p.set('until', String(Math.round(q.until)))
  return `/history/series?${p}`
}

export function poolPath(since: number): string {
  return `/history/pool?since=${Math.round(since)}`
}

/** The answer kept for path (stale), if any. */
export const kept = <T>(path: string) => answers.get<T>(path)

/**
 * Fetches path; on failure answers the kept value marked stale with the
 * error, or throws when nothing is kept.
 */
export const cached = <T>(path: string) => answers.fetch<T>(path, () => request<T>('GET', path), (err) => toApiError(err).message)

export const fetchSeries = (q: SeriesQuery) => cached<Series>(seriesPath(q))
export const fetchPool = (since: number) => cached<PoolSeries>(poolPath(since))
