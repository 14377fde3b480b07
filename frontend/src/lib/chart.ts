// Pure helpers of the history charts: the ranges offered, which metrics a
// chart draws, a history Series turned into uPlot's column data (mean lines,
// min/max bands, breaks where samples are missing), a dragged selection
// turned into the window to fetch, and the pool's stacked counts.
import { formatBytes, formatRate } from './format.ts'

/** One metric of a Series (app.Metric): min, mean and max per time. */
export interface MetricColumns {
  name: string
  unit: string
  min: number[] | null
  mean: number[] | null
  max: number[] | null
}

/** The part of a Series (app.Series) the charts read. */
export interface SeriesColumns {
  tier: string
  step_seconds: number
  times: number[] | null
  metrics: MetricColumns[] | null
}

/** A time range the machine and pool views offer. */
export interface Range {
  key: string
  label: string
  seconds: number
}

export const ranges: Range[] = [
  { key: '1h', label: '1 h', seconds: 3600 },
  { key: '24h', label: '24 h', seconds: 86400 },
  { key: '7d', label: '7 d', seconds: 7 * 86400 },
  { key: '30d', label: '30 d', seconds: 30 * 86400 },
  { key: '1y', label: '1 y', seconds: 365 * 86400 },
]

/** How a chart's values read: its axis and legend format. */
export type ValueKind = 'percent' | 'bytes' | 'rate' | 'celsius' | 'watts' | 'mhz' | 'count'

/** One chart of the machine view: a title and the metrics it draws. */
export interface ChartSpec {
  title: string
  kind: ValueKind
  /** Each metric's colour: a CSS variable of app.css (--c-gpu). */
  metrics: { name: string; label: string; color: string }[]
  /** Fixed y range (percent charts); otherwise from the data, from 0. */
  max?: number
}

/** A chart spec of metrics given as [name, label, colour]. */
function chart(title: string, kind: ValueKind, metrics: [string, string, string][], max?: number): ChartSpec {
  const spec: ChartSpec = { title, kind, metrics: metrics.map(([name, label, color]) => ({ name, label, color })) }
  if (max != null) spec.max = max
  return spec
}

export const gpuCharts: ChartSpec[] = [
  chart('Utilization', 'percent', [['util_percent', 'GPU', '--c-gpu'], ['mem_util_percent', 'memory bus', '--c-mem']], 100),
  chart('Memory used', 'bytes', [['mem_used_bytes', 'used', '--c-vram']]),
  chart('Temperature', 'celsius', [['temp_c', 'temperature', '--c-warn']]),
  chart('Power', 'watts', [['power_w', 'power', '--c-hot']]),
  chart('Clocks', 'mhz', [['sm_clock_mhz', 'SM', '--c-cpu'], ['mem_clock_mhz', 'memory', '--c-mem']]),
]

export const hostCharts: ChartSpec[] = [
  chart('CPU', 'percent', [['cpu_percent', 'CPU', '--c-cpu']], 100),
  chart('Memory used', 'bytes', [['mem_used_bytes', 'used', '--c-mem']]),
  chart('Network', 'rate', [['net_rx_bps', 'receive', '--c-cpu'], ['net_tx_bps', 'transmit', '--c-gpu']]),
  chart('Disk used', 'percent', [['disk_used_percent', 'fullest disk', '--c-warn']], 100),
]

/** Formats a value of a chart; "—" for a missing one. */
export function formatValue(v: number | null | undefined, kind: ValueKind): string {
  if (v == null || !Number.isFinite(v)) return '—'
  switch (kind) {
    case 'percent':
      return `${v < 10 && v !== 0 ? v.toFixed(1) : Math.round(v)}%`
    case 'bytes':
      return formatBytes(v)
    case 'rate':
      return formatRate(v)
    case 'celsius':
      return `${Math.round(v)} °C`
    case 'watts':
      return `${Math.round(v)} W`
    case 'mhz':
      return v >= 1000 ? `${(v / 1000).toFixed(2)} GHz` : `${Math.round(v)} MHz`
    case 'count':
      return Number.isInteger(v) ? String(v) : v.toFixed(1)
  }
}

/** Whether a point of s stands for many samples (a tier coarser than 1 s): draw min/max bands. */
export function hasBands(s: Pick<SeriesColumns, 'step_seconds'>): boolean {
  return s.step_seconds > 1
}

/**
 * Where a chart's data columns sit: for each metric drawn, the column of
 * its mean and, with bands, of its min and max (column 0 is time).
 */
export interface ColumnLayout {
  name: string
  label: string
  mean: number
  min: number | null
  max: number | null
  /** False when the Series has no such metric: its columns are all null. */
  present: boolean
}

/** A chart's uPlot data (time first) and where each metric's columns are. */
export interface ChartData {
  columns: (number | null)[][]
  layout: ColumnLayout[]
  bands: boolean
}

/**
 * Builds one chart's columns from a Series: time, then per metric its mean
 * and (when bands) its min and max. A gap of more than two steps between
 * two times gets a null point, so lines and bands break there instead of
 * drawing across time nobody sampled.
 */
export function chartData(s: SeriesColumns, spec: Pick<ChartSpec, 'metrics'>, bands = hasBands(s)): ChartData {
  const times = s.times ?? []
  const step = s.step_seconds > 0 ? s.step_seconds : 1
  const breaks = gapIndexes(times, step)
  const t: (number | null)[] = []
  for (let i = 0, b = 0; i < times.length; i++) {
    t.push(times[i])
    if (b < breaks.length && breaks[b] === i) {
      t.push(times[i] + step)
      b++
    }
  }
  const columns: (number | null)[][] = [t]
  const layout: ColumnLayout[] = []
  for (const m of spec.metrics) {
    const found = (s.metrics ?? []).find((x) => x.name === m.name)
    const col = (vals: number[] | null | undefined) => {
      columns.push(withBreaks(vals ?? [], times.length, breaks))
      return columns.length - 1
    }
    const mean = col(found?.mean)
    const lo = bands ? col(found?.min) : null
    const hi = bands ? col(found?.max) : null
    layout.push({ name: m.name, label: m.label, mean, min: lo, max: hi, present: !!found })
  }
  return { columns, layout, bands }
}

/** The indexes i after which times jumps by more than two steps. */
export function gapIndexes(times: readonly number[], step: number): number[] {
  const out: number[] = []
  for (let i = 0; i + 1 < times.length; i++) if (times[i + 1] - times[i] > 2 * step) out.push(i)
  return out
}

/** vals padded to n with nulls, and a null after each break index. */
function withBreaks(vals: readonly number[], n: number, breaks: readonly number[]): (number | null)[] {
  const out: (number | null)[] = []
  for (let i = 0, b = 0; i < n; i++) {
    const v = vals[i]
    out.push(v == null || !Number.isFinite(v) ? null : v)
    if (b < breaks.length && breaks[b] === i) {
      out.push(null)
      b++
    }
  }
  return out
}

/** A window of history to fetch: the since seconds that end at until (unix s; 0 = now). */
export interface Window {
  since: number
  until: number
}

/** The shortest window a drag may zoom into, in seconds. */
export const minZoomSeconds = 60

/**
 * Turns a dragged selection [left, right] (unix seconds) into the window to
 * fetch. A selection narrower than minZoomSeconds is widened around its
 * middle; one that reaches now (unix seconds) ends now (until 0), so it
 * keeps following the live end. Returns null for an empty selection.
 */
export function zoomWindow(left: number, right: number, now: number): Window | null {
  if (!Number.isFinite(left) || !Number.isFinite(right) || right <= left) return null
  if (right - left < minZoomSeconds) {
    const mid = (left + right) / 2
    left = mid - minZoomSeconds / 2
    right = mid + minZoomSeconds / 2
  }
  if (right >= now) return { since: Math.max(1, Math.ceil(now - left)), until: 0 }
  return { since: Math.ceil(right - left), until: Math.ceil(right) }
}

/** The x range [start, end] (unix s) a window covers at now. */
export function windowRange(w: Window, now: number): [number, number] {
  const end = w.until > 0 ? w.until : now
  return [end - w.since, end]
}

/** Readable name of a tier: what one point of the chart stands for. */
export function tierLabel(tier: string, step: number, how = 'line mean, band min–max'): string {
  if (step <= 1) return 'each point one sample'
  const span = step % 3600 === 0 ? `${step / 3600} h` : step % 60 === 0 ? `${step / 60} min` : `${step} s`
  return `each point ${span} (${tier} tier)${how ? `: ${how}` : ''}`
}

/**
 * The pool's counts stacked for an area chart: busy, busy + idle-granted,
 * and busy + idle-granted + free per time (nulls stay null).
 */
export function stack(layers: readonly (readonly (number | null)[])[]): (number | null)[][] {
  const out: (number | null)[][] = []
  let below: (number | null)[] | null = null
  for (const layer of layers) {
    const row = layer.map((v, i) => {
      if (v == null) return null
      const b = below ? below[i] : 0
      return b == null ? v : b + v
    })
    out.push(row)
    below = row
  }
  return out
}
