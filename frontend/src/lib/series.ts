// The 5-minute sparkline window: samples merged by time, newest last,
// anything older than the window dropped.
import type { Sample } from '../api/types.ts'

/** The span of a sparkline, in seconds. */
export const windowSeconds = 300

/** One sparkline point: time in seconds since the epoch, CPU % and mean GPU util %. */
export interface Point {
  t: number
  cpu: number
  gpu: number | null
}

/** Returns the mean of the values, or null when there are none. */
export function mean(values: readonly number[] | null | undefined): number | null {
  if (!values || values.length === 0) return null
  let sum = 0
  for (const v of values) sum += v
  return sum / values.length
}

/** Converts a Sample into a Point; null when its time does not parse. */
export function toPoint(s: Sample): Point | null {
  const ms = Date.parse(s.time)
  if (!Number.isFinite(ms)) return null
  return { t: ms / 1000, cpu: s.cpu_percent, gpu: mean(s.gpu_util) }
}

/**
 * Merges new points into a window sorted by time: a point with the time of
 * an existing one replaces it. Then drops points older than `span` seconds
 * before `ref`. The reference is the newest point's time unless given, so
 * a peer whose clock differs from ours still keeps its last 5 minutes.
 * Returns a new array; the input is not modified.
 */
export function mergeWindow(
  window: readonly Point[],
  add: readonly Point[],
  span = windowSeconds,
  ref?: number,
): Point[] {
  let out: Point[]
  const last = window.length ? window[window.length - 1].t : -Infinity
  if (add.every((p, i) => p.t > last && (i === 0 || p.t > add[i - 1].t))) {
    out = window.concat(add) // the common case: new points in order
  } else {
    const byTime = new Map<number, Point>()
    for (const p of window) byTime.set(p.t, p)
    for (const p of add) byTime.set(p.t, p)
    out = [...byTime.values()].sort((a, b) => a.t - b.t)
  }
  return trimWindow(out, span, ref)
}

/** Drops points older than span seconds before ref (default: the newest point). */
export function trimWindow(points: Point[], span = windowSeconds, ref?: number): Point[] {
  if (points.length === 0) return points
  const end = ref ?? points[points.length - 1].t
  const cutoff = end - span
  let i = 0
  while (i < points.length && points[i].t < cutoff) i++
  return i === 0 ? points : points.slice(i)
}

/** Column-major data for uPlot: [times, cpu, gpu]. */
export function toColumns(points: readonly Point[]): [number[], (number | null)[], (number | null)[]] {
  return [points.map((p) => p.t), points.map((p) => p.cpu), points.map((p) => p.gpu)]
}
