// Pure helpers for the jobs view and the launch dialog.
import type { Job, Mount } from '../api/jobs.ts'

const sizeUnits: Record<string, number> = {
  '': 1, b: 1,
  k: 2 ** 10, kib: 2 ** 10, kb: 1e3,
  m: 2 ** 20, mib: 2 ** 20, mb: 1e6,
  g: 2 ** 30, gib: 2 ** 30, gb: 1e9,
  t: 2 ** 40, tib: 2 ** 40, tb: 1e12,
}

/** Parses "32g", "20GiB", "512m", "1.5TB" or a byte count; null when malformed. Mirrors jobs.ParseSize. */
export function parseSize(s: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(s)
  if (!m) return null
  const mult = sizeUnits[m[2].toLowerCase()]
  if (mult === undefined) return null
  return Math.floor(Number(m[1]) * mult)
}

/** Parses FOLDER:/path[:rw|:ro] lines; throws with the bad line. */
export function parseMounts(text: string): Mount[] {
  const out: Mount[] = []
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (!line) continue
    const parts = line.split(':')
    if (parts.length < 2 || parts.length > 3 || !parts[0] || !parts[1].startsWith('/') || (parts[2] && !['rw', 'ro'].includes(parts[2]))) {
      throw new Error(`folder "${line}": write FOLDER:/path or FOLDER:/path:rw`)
    }
    out.push({ folder: parts[0], target: parts[1], rw: parts[2] === 'rw' })
  }
  return out
}

/** Splits a command line the way a shell would for simple quoting. */
export function splitCommand(s: string): string[] {
  const out: string[] = []
  let cur = ''
  let quote: string | null = null
  let any = false
  for (const ch of s) {
    if (quote) {
      if (ch === quote) quote = null
      else cur += ch
    } else if (ch === '"' || ch === "'") {
      quote = ch
      any = true
    } else if (/\s/.test(ch)) {
      if (cur || any) out.push(cur)
      cur = ''
      any = false
    } else {
      cur += ch
    }
  }
  if (quote) throw new Error('the command has an unclosed quote')
  if (cur || any) out.push(cur)
  return out
}

/** How long a job has run (so far), in seconds. */
export function runSeconds(j: Pick<Job, 'started' | 'finished'>, now: number): number {
  if (!j.started) return 0
  const start = Date.parse(j.started)
  const end = j.finished ? Date.parse(j.finished) : now
  return Number.isFinite(start) && Number.isFinite(end) ? Math.max(0, (end - start) / 1000) : 0
}

/** GPU-hours, for people: "0.00", "1.25". */
export function gpuHours(seconds: number): string {
  return (Math.max(0, seconds) / 3600).toFixed(2)
}
