// This machine's lending (GET /api/v1/lend) and its "I'm using it" switch
// (PUT /api/v1/lend/using): the machine's own user's, on the local API
// alone (a pool member reaches neither).
import { request } from './http.ts'
import type { LendState } from './types.gen.ts'

export type { LendState }

/** Where this machine's lender is, and whether the switch is on. */
export function fetchLend(): Promise<LendState> {
  return request<LendState>('GET', '/lend')
}

/** Turns "I'm using it" on (no new guest here; guests yield after the grace) or off. */
export function setLendUsing(using: boolean): Promise<LendState> {
  return request<LendState>('PUT', '/lend/using', { using })
}
