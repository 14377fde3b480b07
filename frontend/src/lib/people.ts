// Pure helpers for people in the Members view: who the members are, each
// with their devices, and who may do what to a person. The daemon decides;
// these only decide which buttons to show.
import type { Can, DeviceCode, Member, Person, PersonDevice, PoolStatus } from '../api/types.ts'
import { mayManage, rolesOffered } from './roles.ts'

/** A person as the view lists them: with their devices' members and whether one is the pool's creator. */
export interface PersonView {
  id: string
  name: string
  role: Person['role']
  active: boolean
  self: boolean
  creator: boolean
  devices: Member[] // in the pool
  removed: Member[] // removed from it
}

/**
 * The pool's people, this machine's person first, then by name, those
 * removed last; from pool.people, or (an older daemon) a person per device.
 */
export function peopleOf(pool: PoolStatus): PersonView[] {
  const members = pool.members ?? []
  const byID = new Map(members.map((m) => [m.id, m]))
  const people: Person[] =
    pool.people && pool.people.length > 0
      ? pool.people
      : members.map((m) => ({
          id: m.id, name: m.name, role: m.role, active: !m.removed, self: !!m.self,
          devices: m.removed ? [] : [m], removed: m.removed ? [m] : [],
        }))
  const memberOf = (d: PersonDevice): Member => byID.get(d.id) ?? { id: d.id, name: d.name, added_at: '', removed: false, online: d.online, self: d.self }
  const out = people.map((p): PersonView => {
    const devices = (p.devices ?? []).map(memberOf)
    const removed = (p.removed ?? []).map(memberOf)
    const all = [...devices, ...removed]
    return {
      id: p.id, name: p.name || p.id, role: p.role, active: p.active, creator: all.some((m) => m.creator),
      self: !!p.self || all.some((m) => m.self), devices, removed,
    }
  })
  const rank = (p: PersonView) => (!p.active ? 2 : p.self ? 0 : 1)
  return out.sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name))
}

/** Whether p's role may be changed here: never the creator's, never this machine's person's own. */
export function mayChangePersonRole(can: Can, p: PersonView): boolean {
  return p.active && !p.creator && !p.self && mayManage(can, p.role) && rolesOffered(can).length > 1
}

/** Whether p, with all their devices, may be removed here. */
export function mayRemovePerson(can: Can, p: PersonView): boolean {
  return p.active && !p.creator && !p.self && mayManage(can, p.role)
}

/** Whether p, removed, may be readmitted here with all their devices. */
export function mayReadmitPerson(can: Can, p: PersonView): boolean {
  return !p.active && !p.self && mayManage(can, p.role)
}

/** Whether one device of p may be removed alone: a person keeps at least one, and never this machine. */
export function mayRemoveDevice(can: Can, p: PersonView, d: Member): boolean {
  return !d.removed && !d.self && !d.creator && p.devices.length > 1 && mayManage(can, p.role)
}

/** Whether one removed device of p, still in the pool, may be readmitted. */
export function mayReadmitDevice(can: Can, p: PersonView, d: Member): boolean {
  return !!d.removed && p.active && !d.self && mayManage(can, p.role)
}

/** Whether a device may be added to p here: by p's own devices, or by an admin or owner who may manage them. */
export function mayAddDevice(can: Can, p: PersonView): boolean {
  return p.active && (p.self || mayManage(can, p.role))
}

/** The people p may be merged into here (owners merge): every other person in the pool. */
export function mergeTargets(can: Can, p: PersonView, people: readonly PersonView[]): PersonView[] {
  if (!can.manage_admins || !p.active || p.creator) return []
  return people.filter((q) => q.active && q.id !== p.id)
}

/** The command to run on the new device: `labpool pool join CODE HOST:PORT`. */
export function joinCommand(dc: DeviceCode): string {
  const addr = dc.addresses?.[0]
  return `labpool pool join ${dc.code}${addr ? ' ' + addr : ''}`
}
