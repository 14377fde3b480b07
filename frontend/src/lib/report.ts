// Pure helpers of the report view: the CSV export (built here from the
// report's JSON, the same as `labpool report --csv` prints) and the bar
// lengths of its chart.
import type { Report, ReportColumn, ReportRow } from '../api/types.gen.ts'

export type ReportLike = Pick<Report, 'by' | 'since' | 'until' | 'rows' | 'totals'>
export type { ReportRow }

/** The ways a report can group its rows: by member, a row per person (the
 * sum of their devices); by device, a row per device of a person. */
export const groupings = [
  { key: 'member', label: 'Person' },
  { key: 'device', label: 'Device' },
  { key: 'node', label: 'Machine' },
  { key: 'gpu', label: 'GPU' },
  { key: 'job', label: 'Job' },
] as const

export type Grouping = (typeof groupings)[number]['key']

/** The report's ranges, in seconds back from now. */
export const reportRanges = [
  { key: '1h', label: '1 h', seconds: 3600 },
  { key: '24h', label: '24 h', seconds: 86400 },
  { key: '7d', label: '7 d', seconds: 7 * 86400 },
  { key: '30d', label: '30 d', seconds: 30 * 86400 },
  { key: '1y', label: '1 y', seconds: 365 * 86400 },
]

const figures = [
  'gpu_hours_granted',
  'gpu_hours_used',
  'idle_granted_hours',
  'unmeasured_hours',
  'energy_kwh',
  'energy_total_kwh',
] as const

/**
 * One CSV field as Go's encoding/csv writes it (quoted when it holds a
 * comma, quote or line break, or starts with a space); a text starting like
 * a spreadsheet formula (=, +, -, @, tab, CR) gets a leading apostrophe so a
 * name a peer chose cannot run as a formula. Numbers in full precision.
 */
export function csvField(v: string | number): string {
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : ''
  let s = v
  if (/^[=+\-@\t\r]/.test(s)) s = "'" + s
  return /[",\r\n]|^ /.test(s) ? `"${s.replaceAll('"', '""')}"` : s
}

/**
 * The report as CSV: a header, a line per row, then the totals (label
 * "total"); reserved_unused_hours last, as the CLI writes it.
 */
export function reportCSV(r: ReportLike): string {
  const head = ['key', 'label', ...figures, 'energy_source', 'reserved_unused_hours']
  const line = (row: ReportRow) =>
    [row.key, row.label, ...figures.map((c) => row[c] ?? 0), row.energy_source ?? '', row.reserved_unused_hours ?? 0].map(csvField).join(',')
  const lines = [head.join(','), ...(r.rows ?? []).map(line), line({ ...r.totals, label: r.totals.label || 'total' })]
  return lines.join('\n') + '\n'
}

/** The file name of a report's CSV: labpool-report-BY-FROM-TO.csv (dates UTC). */
export function reportFileName(r: Pick<ReportLike, 'by' | 'since' | 'until'>): string {
  const day = (t: string) => {
    const d = new Date(t)
    return Number.isFinite(d.getTime()) ? d.toISOString().slice(0, 10) : 'unknown'
  }
  return `labpool-report-${r.by || 'all'}-${day(r.since)}-${day(r.until)}.csv`
}

/**
 * Bar lengths in percent of the largest granted figure: the granted bar of
 * each row, and within it the used, the idle-while-granted and the
 * unmeasured parts (each cut to fit what is left of the granted bar).
 */
export function barWidths(rows: readonly ReportRow[]): { granted: number; used: number; idle: number; unmeasured: number }[] {
  const top = Math.max(0, ...rows.map((r) => r.gpu_hours_granted))
  if (top <= 0) return rows.map(() => ({ granted: 0, used: 0, idle: 0, unmeasured: 0 }))
  const pct = (h: number) => (Math.max(0, h) / top) * 100
  return rows.map((r) => {
    const granted = pct(r.gpu_hours_granted)
    const used = Math.min(pct(r.gpu_hours_used), granted)
    const idle = Math.min(pct(r.idle_granted_hours), granted - used)
    const unmeasured = Math.min(pct(r.unmeasured_hours ?? 0), granted - used - idle)
    return { granted, used, idle, unmeasured }
  })
}

/** Hours as the table shows them. */
export function formatHours(h: number): string {
  if (!Number.isFinite(h)) return '—'
  if (h === 0) return '0'
  return h < 10 ? h.toFixed(2) : h < 100 ? h.toFixed(1) : String(Math.round(h))
}

/**
 * Which holder kinds the report's figures count, in a line, from the
 * columns the report itself lists (as `labpool report` prints it): "GPU-h:
 * jobs, shares (fraction), MIG (fraction), cluster jobs; reserved-unused:
 * reservations". "used" counts what GPU-h does, so it is left out.
 */
export function reportLegend(columns: readonly ReportColumn[] | null | undefined): string {
  return (columns ?? [])
    .filter((c) => c.field !== 'gpu_hours_used')
    .map((c) => `${c.title}: ${(c.includes ?? []).join(', ')}`)
    .join('; ')
}
