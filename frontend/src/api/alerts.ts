// Alerts of the pool (GET /api/v1/alerts), the rules of a machine
// (GET/PUT /api/v1/alerts/rules) and mutes (POST /api/v1/alerts/mute).
import { request } from './http.ts'

// TODO(H7): from types.gen.ts once the alerts routes are in web.Routes.
export interface Alert {
  id: string
  node: string
  rule: string
  severity: string
  gpu: number | null
  folder?: string
  job?: string
  message: string
  value: number
  fired_at: string
  cleared_at: string | null
  muted: boolean
}
export interface AlertRule {
  id: string
  metric: string
  op: string
  threshold: number
  for_seconds: number
  severity: string
  enabled: boolean
}
export interface AlertRuleUpdate {
  metric?: string | null
  op?: string | null
  threshold?: number | null
  for_seconds?: number | null
  severity?: string | null
  enabled?: boolean | null
}
export interface MuteRequest {
  id?: string
  node?: string
  rule?: string
  gpu?: number | null
  seconds: number
}
export interface AlertRuleChange {
  rule: AlertRule
  applied: string[] | null
  failed: { node: string; name: string; error: string }[] | null
}

const enc = encodeURIComponent

export const alerts = async (since = 0) =>
  (await request<Alert[] | null>('GET', since > 0 ? `/alerts?since=${Math.round(since)}` : '/alerts')) ?? []

/** The rules a machine evaluates (this one when node is ""). */
export const rules = async (node = '') =>
  (await request<AlertRule[] | null>('GET', node ? `/alerts/rules?node=${enc(node)}` : '/alerts/rules')) ?? []

/** Changes a rule on every machine of the pool (owners and admins). */
export const setRule = (id: string, u: AlertRuleUpdate) => request<AlertRuleChange>('PUT', `/alerts/rules/${enc(id)}`, u)

/** Mutes an alert's rule on its machine for seconds (0 unmutes). */
export const mute = (m: MuteRequest) => request<unknown>('POST', '/alerts/mute', m)
