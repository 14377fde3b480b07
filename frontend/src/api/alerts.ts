// Alerts of the pool (GET /api/v1/alerts), the rules of a machine
// (GET/PUT /api/v1/alerts/rules) and mutes (POST /api/v1/alerts/mute).
import { request } from './http.ts'
import type { Alert, AlertRule, AlertRuleChange, AlertRuleRequest, MuteRequest } from './types.gen.ts'

export type { Alert, AlertRule }

const enc = encodeURIComponent

export const alerts = async (since = 0) =>
  (await request<Alert[] | null>('GET', since > 0 ? `/alerts?since=${Math.round(since)}` : '/alerts')) ?? []

/** The rules a machine evaluates (this one when node is ""). */
export const rules = async (node = '') =>
  (await request<AlertRule[] | null>('GET', node ? `/alerts/rules?node=${enc(node)}` : '/alerts/rules')) ?? []

/** Changes a rule on every machine of the pool (owners and admins). */
export const setRule = (id: string, u: AlertRuleRequest) => request<AlertRuleChange>('PUT', `/alerts/rules/${enc(id)}`, u)

/** Mutes an alert's rule on its machine for seconds (0 unmutes). */
export const mute = (m: MuteRequest) => request<unknown>('POST', '/alerts/mute', m)
