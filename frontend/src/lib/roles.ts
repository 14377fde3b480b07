// Pure helpers for roles, members and invites: who may do what in the
// Members view, and how invites read. The daemon decides; these only decide
// which buttons to show (a refusal from the daemon is still shown as-is).
import type { Can, Invite, Member, PoolStatus, Role } from '../api/types.ts'
import { formatDuration, formatWhen, isZeroTime, plural } from './format.ts'

export const roles: Role[] = ['owner', 'admin', 'member', 'viewer']

/** Lifetimes offered for a new invite, in seconds. */
export const inviteLifetimes: { label: string; seconds: number }[] = [
  { label: '1 h', seconds: 3600 },
  { label: '24 h', seconds: 86400 },
  { label: '7 d', seconds: 7 * 86400 },
]

const none: Can = { launch: false, manage_members: false, manage_admins: false }

/** What this machine may do; an older daemon without roles allows what it always did. */
export function canOf(pool: PoolStatus | null | undefined): Can {
  if (!pool) return none
  return pool.can ?? { launch: true, manage_members: true, manage_admins: false }
}

/** Whether acting on a device or invite of this role needs the owners' right. */
function needsOwner(role: string | undefined): boolean {
  return role === 'owner' || role === 'admin'
}

/** Whether can covers a device or invite of this role. */
export function mayManage(can: Can, role: string | undefined): boolean {
  return needsOwner(role) ? can.manage_admins : can.manage_members
}

/** Whether the role of m may be changed here: never the creator's, never this machine's own. */
export function mayChangeRole(can: Can, m: Member): boolean {
  return !m.removed && !m.creator && !m.self && mayManage(can, m.role) && rolesOffered(can).length > 1
}

/** Whether m may be removed here: never the creator, never this machine (leaving is not offered). */
export function mayRemove(can: Can, m: Member): boolean {
  return !m.removed && !m.creator && !m.self && mayManage(can, m.role)
}

/** Whether m, removed, may be readmitted here (with the role it had): by an owner, or an admin for a member or viewer. */
export function mayReadmit(can: Can, m: Member): boolean {
  return !!m.removed && !m.self && mayManage(can, m.role)
}

/** The roles this machine may give a member. */
export function rolesOffered(can: Can): Role[] {
  if (can.manage_admins) return roles
  if (can.manage_members) return ['member', 'viewer']
  return []
}

/** The roles this machine may invite with, the usual one first. */
export function inviteRolesOffered(can: Can): Role[] {
  if (can.manage_admins) return ['member', 'viewer', 'admin']
  if (can.manage_members) return ['member', 'viewer']
  return []
}

/** Whether inv may be revoked here. */
export function mayRevoke(can: Can, inv: Invite): boolean {
  return inv.state === 'active' && mayManage(can, inv.role)
}

export type MemberState = 'online' | 'offline' | 'removed'

export function memberState(m: Member): MemberState {
  if (m.removed) return 'removed'
  return m.online ? 'online' : 'offline'
}

/** Members in the order the view lists them: this machine, then by role, then by name; removed ones last. */
export function sortMembers(list: readonly Member[]): Member[] {
  const rank = (m: Member) => (m.removed ? 10 : m.self ? -1 : Math.max(0, roles.indexOf(m.role as Role)))
  return [...list].sort((a, b) => rank(a) - rank(b) || (a.name || a.id).localeCompare(b.name || b.id))
}

/** Invites in the order the view lists them: active ones first, then the newest first. */
export function sortInvites(list: readonly Invite[]): Invite[] {
  const t = (i: Invite) => Date.parse(i.created_at) || 0
  return [...list].sort((a, b) => Number(b.state === 'active') - Number(a.state === 'active') || t(b) - t(a))
}

/** "XXXX-XXXX", the short form of a device ID the CLI shows. */
export function shortID(id: string): string {
  const s = id.replace(/-/g, '')
  return s.length <= 8 ? s : `${s.slice(0, 4)}-${s.slice(4, 8)}`
}

/** "unlimited", or "2 of 3 left". */
export function usesLeftLabel(inv: Invite): string {
  if (inv.uses_left < 0 || inv.uses <= 0) return 'unlimited'
  return `${inv.uses_left} of ${inv.uses} left`
}

/**
 * What a join code allows, said when it is shown (as `pool create` and
 * `pool invite` print it): "1 machine can join with it, as member, until 29
 * Nov, 06:52 (in 24 h)." An unlimited code says so, and to revoke it once
 * everyone has joined.
 */
export function inviteTerms(inv: Pick<Invite, 'uses' | 'uses_left' | 'expires'> & { role?: string }, now: number): string {
  const unlimited = inv.uses_left < 0 || inv.uses <= 0
  const who = unlimited ? 'Any number of machines' : plural(inv.uses_left, 'machine')
  const until = isZeroTime(inv.expires) ? ', and it does not expire' : `, until ${formatWhen(inv.expires, { now })} (${expiryRelative(inv.expires, now)})`
  const role = inv.role ? `, as ${inv.role}` : ''
  return `${who} can join with it${role}${until}.${unlimited ? ' Revoke it in Members once everyone has joined.' : ''}`
}

/** When an invite ends, relative to now (ms): "in 23 h", "2 h ago", "never". */
export function expiryRelative(expires: string, now: number): string {
  if (isZeroTime(expires)) return 'never'
  const diff = (Date.parse(expires) - now) / 1000
  return diff >= 0 ? `in ${formatDuration(diff)}` : `${formatDuration(-diff)} ago`
}


/**
 * Why this machine cannot launch jobs, or "" when it can (or when the
 * daemon does not say: then the Launch button stays and the daemon decides).
 */
export function whyNoLaunch(pool: PoolStatus | null | undefined): string {
  const can = pool?.can
  if (!can || can.launch) return ''
  if (can.why) return can.why
  const role = pool?.self_role
  return role ? `This machine is a ${role} of the pool: it cannot launch jobs.` : 'This machine cannot launch jobs.'
}

/**
 * Whether this machine may stop, remove, read the logs of or open ports of
 * job j: its owner, an admin or owner of the pool, or the machine that runs
 * it. Everyone else sees that it exists. Without pool information the
 * buttons stay and the node decides.
 */
export function mayActOnJob(pool: PoolStatus | null | undefined, j: { owner: string; node: string }): boolean {
  if (!pool?.self_id || !pool.can) return true
  return pool.can.manage_members || j.owner === pool.self_id || j.node === pool.self_id
}
