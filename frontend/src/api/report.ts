// The pool's usage report (GET /api/v1/report).
import { request } from './http.ts'
import type { Report } from './types.gen.ts'

export type { Report }

export const report = (since: number, by: string) =>
  request<Report>('GET', `/report?since=${Math.round(since)}&by=${encodeURIComponent(by)}`)
