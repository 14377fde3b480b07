// Pool management beyond create/join: invites and roles (app/api.go,
// routes under /api/v1/pool). Members are removed through Transport.removeMember.
import type { AddDeviceRequest, DeviceCode, Invite, InviteRequest, NewInvite, Role } from './types.ts'

export interface PoolTransport {
  /** The pool's invites; empty for members and viewers. */
  invites(): Promise<Invite[]>
  /** Makes an invite; its code is shown once, here. */
  createInvite(req: InviteRequest): Promise<NewInvite>
  revokeInvite(id: string): Promise<void>
  setRole(id: string, role: Role): Promise<void>
  /** Takes back a removed device, with its role, name and history (owners and admins). */
  readmit(id: string): Promise<void>
  /** A code that adds one device to a person (this machine's by default). */
  addDevice(req: AddDeviceRequest): Promise<DeviceCode>
  /** Makes person who one with person into (owners). */
  mergePeople(who: string, into: string): Promise<void>
}

/** The HTTP transport's JSON request helper (http.ts). */
export type RequestFunc = <T>(method: string, path: string, body?: unknown) => Promise<T>

const enc = encodeURIComponent

/** The pool calls over the local HTTP API. */
export function httpPool(request: RequestFunc): PoolTransport {
  return {
    invites: async () => (await request<Invite[] | null>('GET', '/pool/invites')) ?? [],
    createInvite: (req) => request<NewInvite>('POST', '/pool/invites', req),
    revokeInvite: (id) => request<void>('DELETE', `/pool/invites/${enc(id)}`),
    setRole: (id, role) => request<void>('PUT', `/pool/members/${enc(id)}/role`, { role }),
    readmit: (id) => request<void>('POST', `/pool/members/${enc(id)}/readmit`),
    addDevice: (req) => request<DeviceCode>('POST', '/pool/devices', req),
    mergePeople: (who, into) => request<void>('POST', '/pool/merge', { who, into }),
  }
}
