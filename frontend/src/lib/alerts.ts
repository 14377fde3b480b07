// Pure helpers of the alerts view: active alerts apart from past ones, and
// a rule read as a sentence.

/** The part of an alert (app.Alert) the helpers read. */
export interface AlertLike {
  id: string
  fired_at: string
  cleared_at?: string | null
  severity: string
  muted: boolean
}

/** The part of a rule (app.AlertRule) the helpers read. */
export interface RuleLike {
  metric: string
  op: string
  threshold: number
  for_seconds: number
}

/** Whether an alert has not cleared yet. */
export function isActive(a: Pick<AlertLike, 'cleared_at'>): boolean {
  return !a.cleared_at || a.cleared_at.startsWith('0001-01-01')
}

const rank = (a: AlertLike) => (a.muted ? 2 : 0) + (a.severity === 'critical' ? 0 : 1)

/**
 * Splits alerts into the active ones (critical before warning, muted last,
 * then newest first) and the past ones (newest cleared first).
 */
export function splitAlerts<A extends AlertLike>(alerts: readonly A[] | null | undefined): { active: A[]; past: A[] } {
  const all = alerts ?? []
  const active = all.filter(isActive).sort((a, b) => rank(a) - rank(b) || b.fired_at.localeCompare(a.fired_at))
  const past = all.filter((a) => !isActive(a)).sort((a, b) => (b.cleared_at ?? '').localeCompare(a.cleared_at ?? ''))
  return { active, past }
}

const opWords: Record<string, string> = { '>': 'over', '>=': 'at or over', '<': 'under', '<=': 'at or under', '==': 'at', '!=': 'not at' }

/** A rule as a sentence: "temp_c over 85 for 2 min". */
export function describeRule(r: RuleLike): string {
  const op = opWords[r.op] ?? r.op
  const dur = r.for_seconds > 0 ? ` for ${durationText(r.for_seconds)}` : ''
  return `${r.metric} ${op} ${r.threshold}${dur}`
}

/** Seconds as "90 s", "2 min", "1 h 30 min". */
export function durationText(s: number): string {
  if (s < 60 || s % 60 !== 0) return `${s} s`
  const m = s / 60
  if (m < 60) return `${m} min`
  const h = Math.floor(m / 60)
  return m % 60 === 0 ? `${h} h` : `${h} h ${m % 60} min`
}

/** Parses "90", "90s", "2m", "2 min", "1h" into seconds; null when it does not read. */
export function parseDuration(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*$/i.exec(text)
  if (!m) return null
  const n = Number(m[1])
  const unit = (m[2] ?? 's').toLowerCase()
  const mult = unit.startsWith('h') ? 3600 : unit.startsWith('m') ? 60 : 1
  return Math.round(n * mult)
}

/** The machine whose rules the editor opens on: this one when it has
 * GPUs (most rules are about GPUs), else the first machine that has them
 * (a laptop's editor opened on itself, GPU rules with nothing to watch),
 * else this one. nodes are those whose rules may be read. */
export function defaultRuleNode(
  nodes: readonly { id: string; gpus?: readonly unknown[] | null; cluster?: unknown }[],
  selfID: string,
): string {
  const withGPUs = (n: (typeof nodes)[number]) => (n.gpus ?? []).length > 0 && !n.cluster
  const self = nodes.find((n) => n.id === selfID)
  if (self && withGPUs(self)) return self.id
  return (nodes.find(withGPUs) ?? self ?? nodes[0])?.id ?? ''
}

/** The metrics about GPUs (node/alerts: MetricTemp, MetricGrantedUtil,
 * MetricUtil, MetricMemUsed, MetricPower, MetricHealth, MetricThrottle). */
const gpuMetrics = new Set(['temp_c', 'granted_util_percent', 'util_percent', 'mem_used_percent', 'power_w', 'health', 'throttle'])

/** Whether a rule watches GPUs (and so nothing on a machine without). */
export const isGPURule = (r: { metric: string }) => gpuMetrics.has(r.metric)

/**
 * Why the GPU rules of the machine the editor shows watch nothing there
 * (a laptop without GPUs), or "" when it has GPUs or is a Slurm cluster
 * (whose GPUs are its nodes'). The rules stay editable: a change is set on
 * every machine of the pool.
 */
export function gpuRulesNote(node: { name: string; gpus?: readonly unknown[] | null; gpu_error?: string; cluster?: unknown } | undefined): string {
  if (!node || node.cluster || (node.gpus ?? []).length > 0) return ''
  const why = node.gpu_error ? ` (${node.gpu_error})` : ''
  return `${node.name} has no GPU${why}: its GPU rules, dimmed, have nothing to watch there. A change to them is still set on every machine of the pool.`
}
