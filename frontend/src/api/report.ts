// The pool's usage report (GET /api/v1/report).
import { request } from './http.ts'

// TODO(H7): from types.gen.ts once the report route is in web.Routes.
export interface ReportRow {
  key: string
  label: string
  gpu_hours_granted: number
  gpu_hours_used: number
  idle_granted_hours: number
  unmeasured_hours?: number
  energy_kwh: number
  energy_total_kwh?: number
  energy_source?: string
}
export interface Report {
  since: string
  until: string
  by: string
  rows: ReportRow[] | null
  totals: ReportRow
  step_seconds?: number
}

export const report = (since: number, by: string) =>
  request<Report>('GET', `/report?since=${Math.round(since)}&by=${encodeURIComponent(by)}`)
