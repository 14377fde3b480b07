// Types of the local API (app/api.go): generated from the Go types into
// types.gen.ts (make gen), re-exported here, narrowed where the UI knows
// more than Go's types say (roles and states are string unions).
import type * as G from './types.gen.ts'

export type {
  Can,
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
  JoinCode,
  JoinRequest,
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

/** A role in the pool, from the most to the least trusted. */
export type Role = 'owner' | 'admin' | 'member' | 'viewer'

export interface Member extends Omit<Loose<G.Member, 'added_by' | 'online' | 'self' | 'creator'>, 'role'> {
  role?: Role | ''
}

export interface Invite extends Omit<G.Invite, 'role' | 'state'> {
  role: Role
  state: 'active' | 'expired' | 'used up' | 'revoked'
}

export interface InviteRequest extends Omit<G.InviteRequest, 'role'> {
  role: Role
}

export interface PoolStatus extends Omit<Loose<G.PoolStatus, 'self_id' | 'can'>, 'members' | 'invites' | 'self_role'> {
  members: Member[] | null
  /** Empty for members and viewers. */
  invites?: Invite[] | null
  /** "" when not in a pool. */
  self_role?: Role | ''
}
