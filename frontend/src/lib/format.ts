// Pure formatting helpers for the dashboard.

const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']

/** Formats a byte count with binary units: 0 B, 512 B, 1.5 KiB, 23.4 GiB, 1.0 TiB. */
export function formatBytes(n: number | null | undefined): string {
  if (n == null || !Number.isFinite(n) || n < 0) return '—'
  let i = 0
  let v = n
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024
    i++
  }
  if (i === 0) return `${Math.round(v)} B`
  return `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${units[i]}`
}

/** Formats a byte rate: 0 B/s, 1.2 MiB/s. */
export function formatRate(bps: number | null | undefined): string {
  const b = formatBytes(bps)
  return b === '—' ? b : `${b}/s`
}

/** Formats a duration in seconds as an age: "3 s", "42 s", "5 min", "2 h 5 min", "3 d". */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds))
  if (s < 60) return `${s} s`
  const m = Math.floor(s / 60)
  if (m < 60) return `${m} min`
  const h = Math.floor(m / 60)
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`
  return `${Math.floor(h / 24)} d`
}

/** The zero time Go sends for a time.Time never set. */
export function isZeroTime(t: string | null | undefined): boolean {
  if (!t) return true
  const ms = Date.parse(t)
  return !Number.isFinite(ms) || ms <= 0 || t.startsWith('0001-01-01')
}

/**
 * Formats how long ago t was, relative to now (ms since epoch): "42 s ago",
 * "just now" for clocks a little ahead, "never" for the zero time.
 */
export function formatAgo(t: string | null | undefined, now: number): string {
  if (isZeroTime(t)) return 'never'
  const diff = (now - Date.parse(t as string)) / 1000
  if (diff < 1) return 'just now'
  return `${formatDuration(diff)} ago`
}

/** Formats a percentage with no decimals, clamped to 0..100: "37%". */
export function formatPercent(p: number | null | undefined): string {
  if (p == null || !Number.isFinite(p)) return '—'
  return `${Math.round(clamp(p, 0, 100))}%`
}

/** Clamps v into [lo, hi]. */
export function clamp(v: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, v))
}

/** Returns used/total as a percentage, 0 when total is 0. */
export function percentOf(used: number, total: number): number {
  if (!total || !Number.isFinite(used) || !Number.isFinite(total)) return 0
  return clamp((used / total) * 100, 0, 100)
}
