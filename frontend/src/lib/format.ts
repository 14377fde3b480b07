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

// Times for people: the one home of every absolute date and time the UI
// shows, so that one screen never shows two styles ("6/15/2026, 10:32:00 AM"
// beside "15 Jun, 10:32"). Local time, 24-hour, English month and day names
// (the UI's language, whatever the browser's locale says; WebKitGTK may say
// "C"). Relative times are formatAgo's and formatDuration's.

/** A time as Go sends it (RFC 3339), milliseconds since the epoch, or a Date. */
export type TimeLike = string | number | Date | null | undefined

const monthNames = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const dayNames = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat']
const pad2 = (n: number) => String(n).padStart(2, '0')

/** t as a Date, or null for none: missing, unparsable or Go's zero time. */
function dateOf(t: TimeLike): Date | null {
  if (t == null || t === '') return null
  if (typeof t === 'string' && isZeroTime(t)) return null
  const d = t instanceof Date ? t : new Date(t)
  const ms = d.getTime()
  return Number.isFinite(ms) && ms > 0 ? d : null
}

export interface WhenOptions {
  /** Show the seconds too ("10:32:07"): for a chart's cursor, a file's time. */
  seconds?: boolean
  /** The reference for the year, ms since the epoch: the year is shown when t's differs. */
  now?: number
}

/** The time of day, local, 24-hour: "09:05" (or "09:05:07"); "—" for none. */
export function formatClock(t: TimeLike, { seconds = false }: WhenOptions = {}): string {
  const d = dateOf(t)
  if (!d) return '—'
  const hm = `${pad2(d.getHours())}:${pad2(d.getMinutes())}`
  return seconds ? `${hm}:${pad2(d.getSeconds())}` : hm
}

/**
 * A date and time, local, 24-hour, as every absolute time in the UI is
 * written: "15 Jun, 10:32"; "15 Jun 2025, 10:32" in another year than
 * now's; "—" for none.
 */
export function formatWhen(t: TimeLike, opts: WhenOptions = {}): string {
  const d = dateOf(t)
  return d ? `${formatDate(d, opts)}, ${formatClock(d, opts)}` : '—'
}

/** A date, local: "15 Jun"; "15 Jun 2025" in another year than now's; "—" for none. */
export function formatDate(t: TimeLike, { now = Date.now() }: WhenOptions = {}): string {
  const d = dateOf(t)
  if (!d) return '—'
  const year = new Date(now).getFullYear()
  return `${d.getDate()} ${monthNames[d.getMonth()]}${d.getFullYear() === year ? '' : ` ${d.getFullYear()}`}`
}

/**
 * A tick of a chart's time axis, t with ticks stepSeconds apart: the date
 * ("15 Jun") for steps of a day or more, the clock with seconds ("10:32:05")
 * for steps under a minute, else the clock ("10:32").
 */
export function formatTick(t: TimeLike, stepSeconds: number, opts: WhenOptions = {}): string {
  if (stepSeconds >= 86400) return formatDate(t, opts)
  return formatClock(t, { seconds: stepSeconds < 60 })
}

/**
 * A span of time: "15 Jun, 10:00 – 16 Jun, 09:00", or "15 Jun, 10:00 –
 * 12:30" within one day; "—" when either end is none.
 */
export function formatSpan(from: TimeLike, until: TimeLike, opts: WhenOptions = {}): string {
  const a = dateOf(from)
  const b = dateOf(until)
  if (!a || !b) return '—'
  const sameDay = a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate()
  return `${formatWhen(a, opts)} – ${sameDay ? formatClock(b, opts) : formatWhen(b, opts)}`
}

/** A day on a day axis, local: "Tue 24"; "—" for none. */
export function formatDay(t: TimeLike): string {
  const d = dateOf(t)
  return d ? `${dayNames[d.getDay()]} ${d.getDate()}` : '—'
}

/**
 * The noun for n of it: noun(1, 'file') is "file", noun(3, 'file') "files";
 * many where the plural is not one + "s" (noun(2, 'process', 'processes')).
 * The one home of plurals, so that the UI never says "1 uses".
 */
export function noun(n: number, one: string, many = `${one}s`): string {
  return n === 1 ? one : many
}

/** n and its noun: plural(1, 'file') is "1 file", plural(0, 'file') "0 files". */
export function plural(n: number, one: string, many?: string): string {
  return `${n} ${noun(n, one, many)}`
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
