// Reservations of the pool's machines (GET/POST /api/v1/reservations,
// DELETE /api/v1/reservations/{id}): each machine decides and publishes its
// own; the UI lists and asks, never decides.
import { request } from './http.ts'
import type * as G from './types.gen.ts'

export interface Reservation extends Omit<G.Reservation, 'state'> {
  state: 'accepted' | 'refused' | 'cancelled'
}

export type ReserveRequest = G.ReserveRequest

const enc = encodeURIComponent

export const reservations = async () => (await request<Reservation[] | null>('GET', '/reservations')) ?? []

/** Asks the machine req.node for a reservation; it refuses naming the rule. */
export const reserve = (req: ReserveRequest) => request<Reservation>('POST', '/reservations', req)

/** Cancels a reservation (its member, an admin or owner, or the machine's user). */
export const unreserve = (id: string) => request<Reservation>('DELETE', `/reservations/${enc(id)}`)
