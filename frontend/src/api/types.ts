// Types of the local API (app/api.go): generated from the Go types into
// types.gen.ts (make gen), re-exported here, narrowed where the UI knows
// more than Go's types say (roles and states are string unions).
import type * as G from './types.gen.ts'

export type {
  Can,
  AddDeviceRequest,
  Cluster,
  ClusterGPUs,
  ClusterNode,
  ClusterPartition,
  ClusterPlan,
  ClusterQueueJob,
  Disk,
  ErrorBody,
  GPU,
  History,
  HostStats,
  JoinRequest,
  MergeRequest,
  NewInvite,
  NodeInfo,
  Policy,
  PolicyUpdate,
  ProbeResult,
  Sample,
  Self,
} from './types.gen.ts'

/**
 * T with the keys K optional: fields Go always sends that the UI does
 * without (the dev server and older daemons leave them out). K must be keys
 * of T, so a field renamed in Go fails the check here too.
 */
export type Loose<T, K extends keyof T> = Omit<T, K> & Partial<Pick<T, K>>

export type Node = Loose<G.Node, 'containers'>

/** A pool's first invite as `create` made it; the code dialog shows an invite's too (no person). */
export type JoinCode = Loose<G.JoinCode, 'person'>

/** A role in the pool, from the most to the least trusted. */
export type Role = 'owner' | 'admin' | 'member' | 'viewer'

export interface Member extends Omit<Loose<G.Member, 'added_by' | 'online' | 'self' | 'creator' | 'person_id' | 'person_name'>, 'role'> {
  role?: Role | ''
}

/** A person: one name and role across their devices (an older daemon sends no people). */
export interface Person extends Omit<Loose<G.Person, 'self'>, 'role' | 'devices' | 'removed'> {
  role?: Role | ''
  devices: PersonDevice[] | null
  removed: PersonDevice[] | null
}

export type PersonDevice = Loose<G.PersonDevice, 'online' | 'self'>

/** A code that adds one device to a person, and where this machine is. */
export interface DeviceCode extends Omit<G.DeviceCode, 'invite'> {
  invite: Invite
}

export interface Invite extends Omit<G.Invite, 'role' | 'state'> {
  role: Role
  state: 'active' | 'expired' | 'used up' | 'revoked'
}

export interface InviteRequest extends Omit<G.InviteRequest, 'role'> {
  role: Role
}

export interface PoolStatus extends Omit<Loose<G.PoolStatus, 'self_id' | 'can' | 'people'>, 'members' | 'invites' | 'self_role' | 'people'> {
  members: Member[] | null
  /** Who the members are; an older daemon sends none. */
  people?: Person[] | null
  /** Empty for members and viewers. */
  invites?: Invite[] | null
  /** "" when not in a pool. */
  self_role?: Role | ''
}
