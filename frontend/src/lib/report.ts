// Pure helpers of the report view: the CSV export (built here from the
// report's JSON) and the bar lengths of its chart.

/** The part of a report row (app.ReportRow) the view shows. */
export interface ReportRowLike {
  key: string
  label: string
  gpu_hours_granted: number
  gpu_hours_used: number
  idle_granted_hours: number
  energy_kwh: number
}

export interface ReportLike {
  by: string
  since: string | number
  until: string | number
  rows: ReportRowLike[] | null
  totals: ReportRowLike
}

/** The ways a report can group its rows. */
export const groupings = [
  { key: 'member', label: 'Member' },
  { key: 'node', label: 'Machine' },
  { key: 'gpu', label: 'GPU' },
  { key: 'job', label: 'Job' },
] as const

export type Grouping = (typeof groupings)[number]['key']

/** The report's ranges, in seconds back from now. */
export const reportRanges = [
  { key: '24h', label: '24 h', seconds: 86400 },
  { key: '7d', label: '7 d', seconds: 7 * 86400 },
  { key: '30d', label: '30 d', seconds: 30 * 86400 },
  { key: '1y', label: '1 y', seconds: 365 * 86400 },
]

const columns = ['gpu_hours_granted', 'gpu_hours_used', 'idle_granted_hours', 'energy_kwh'] as const

/**
 * One CSV field: quoted when it holds a comma, quote or line break; a text
 * starting like a spreadsheet formula (=, +, -, @, tab, CR) gets a leading
 * apostrophe so a label a peer chose cannot run as a formula.
 */
export function csvField(v: string | number): string {
  if (typeof v === 'number') return Number.isFinite(v) ? String(round(v)) : ''
  let s = v
  if (/^[=+\-@\t\r]/.test(s)) s = "'" + s
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s
}

function round(v: number): number {
  return Math.round(v * 1000) / 1000
}

/** The report as CSV (RFC 4180, CRLF): a header, one line per row, then the totals. */
export function reportCSV(r: ReportLike): string {
  const head = [r.by || 'key', 'label', ...columns]
  const line = (row: ReportRowLike) => [row.key, row.label, ...columns.map((c) => row[c])].map(csvField).join(',')
  const lines = [head.join(','), ...(r.rows ?? []).map(line), line({ ...r.totals, key: 'total', label: r.totals.label || 'total' })]
  return lines.join('\r\n') + '\r\n'
}

/** The file name of a report's CSV: labpool-report-BY-FROM-TO.csv (dates UTC). */
export function reportFileName(r: Pick<ReportLike, 'by' | 'since' | 'until'>): string {
  const day = (t: string | number) => {
    const d = new Date(typeof t === 'number' ? t * 1000 : t)
    return Number.isFinite(d.getTime()) ? d.toISOString().slice(0, 10) : 'unknown'
  }
  return `labpool-report-${r.by || 'all'}-${day(r.since)}-${day(r.until)}.csv`
}

/**
 * Bar lengths in percent of the largest granted figure: the granted bar of
 * each row, and within it the used and the idle-while-granted parts (cut to
 * fit the granted bar).
 */
export function barWidths(rows: readonly ReportRowLike[]): { granted: number; used: number; idle: number }[] {
  const top = Math.max(0, ...rows.map((r) => r.gpu_hours_granted))
  if (top <= 0) return rows.map(() => ({ granted: 0, used: 0, idle: 0 }))
  const pct = (h: number) => (Math.max(0, h) / top) * 100
  return rows.map((r) => {
    const granted = pct(r.gpu_hours_granted)
    const used = Math.min(pct(r.gpu_hours_used), granted)
    const idle = Math.min(pct(r.idle_granted_hours), granted - used)
    return { granted, used, idle }
  })
}

/** Hours as the table shows them. */
export function formatHours(h: number): string {
  if (!Number.isFinite(h)) return '—'
  if (h === 0) return '0'
  return h < 10 ? h.toFixed(2) : h < 100 ? h.toFixed(1) : String(Math.round(h))
}
