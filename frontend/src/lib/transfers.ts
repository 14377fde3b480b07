// Pure helpers for the progress of copies: rate and time left, from the
// samples the Folders view takes as it polls.
import type { Transfer } from '../api/folders.ts'
import { isZeroTime } from './format.ts'

/** The span of samples a rate is measured over, in milliseconds. */
export const rateWindowMs = 5000

/** Bytes done by a transfer at a time (ms since the epoch, our clock). */
export interface Sample {
  at: number
  done: number
}

/**
 * Appends a sample and drops those older than `span` before it, keeping
 * the newest of the dropped ones so the window still spans `span`. A
 * sample whose bytes went down (a restarted copy) starts a new window.
 * Returns a new array; the input is not modified.
 */
export function addSample(samples: readonly Sample[], s: Sample, span = rateWindowMs): Sample[] {
  const last = samples.at(-1)
  if (last && (s.done < last.done || s.at < last.at)) return [s]
  const all = [...samples, s]
  let first = 0
  while (first + 1 < all.length - 1 && s.at - all[first + 1].at >= span) first++
  return all.slice(first)
}

/** Bytes per second over the samples; null with fewer than two, or none of them apart. */
export function windowRate(samples: readonly Sample[]): number | null {
  if (samples.length < 2) return null
  const a = samples[0]
  const b = samples[samples.length - 1]
  const dt = (b.at - a.at) / 1000
  return dt > 0 ? (b.done - a.done) / dt : null
}

/**
 * Mean bytes per second from the start of t to its end, or to `now` while
 * it runs; null when the times do not tell. The receiving machine's clock
 * sets `started`, so for a running copy this is only a fallback.
 */
export function averageRate(t: Pick<Transfer, 'started' | 'finished' | 'progress'>, now: number): number | null {
  if (isZeroTime(t.started)) return null
  const end = t.finished && !isZeroTime(t.finished) ? Date.parse(t.finished) : now
  const dt = (end - Date.parse(t.started)) / 1000
  return dt > 0 ? t.progress.done / dt : null
}

/** Seconds left at bps bytes per second; null when the total or rate is unknown. */
export function timeLeft(bytes: number, done: number, bps: number | null): number | null {
  if (!(bytes > 0) || bps == null || !(bps > 0)) return null
  return Math.max(0, bytes - done) / bps
}

/**
 * The rate the copy bar shows: a running copy's, measured over the samples
 * this page took (null until it has two: its first tick once divided the
 * bytes done before the page looked by the few milliseconds since the
 * receiving machine's clock said it started, "24 TB/s"); an ended copy's
 * mean, when it sent anything (one that found everything in place only
 * looked).
 */
export function transferRate(t: Pick<Transfer, 'state' | 'started' | 'finished' | 'progress'>, window: readonly Sample[], now: number): number | null {
  if (t.state === 'running') return windowRate(window)
  return t.progress.sent > 0 ? averageRate(t, now) : null
}
