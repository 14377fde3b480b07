import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Can, Invite, Member, PoolStatus } from '../api/types.ts'
import { formatWhen } from './format.ts'
import {
  canOf,
  expiryRelative,
  inviteRolesOffered,
  inviteTerms,
  mayActOnJob,
  mayChangeRole,
  mayReadmit,
  mayRemove,
  mayRevoke,
  memberState,
  rolesOffered,
  shortID,
  sortInvites,
  sortMembers,
  usesLeftLabel,
  whyNoLaunch,
} from './roles.ts'

const owner: Can = { launch: true, manage_members: true, manage_admins: true }
const admin: Can = { launch: true, manage_members: true, manage_admins: false }
const member: Can = { launch: true, manage_members: false, manage_admins: false }
const viewer: Can = { launch: false, manage_members: false, manage_admins: false, why: 'Viewers watch the pool.' }

const m = (over: Partial<Member>): Member => ({ id: 'ID', name: 'n', role: 'member', added_at: '', removed: false, ...over })
const inv = (over: Partial<Invite>): Invite => ({
  id: 'i1', role: 'member', uses: 0, used: 0, uses_left: -1, expires: '', created_by: '', created_at: '', state: 'active', ...over,
})

test('who may change roles and remove', () => {
  const tests: { name: string; can: Can; m: Member; change: boolean; remove: boolean }[] = [
    { name: 'owner on member', can: owner, m: m({}), change: true, remove: true },
    { name: 'owner on admin', can: owner, m: m({ role: 'admin' }), change: true, remove: true },
    { name: 'owner on creator', can: owner, m: m({ role: 'owner', creator: true }), change: false, remove: false },
    { name: 'owner on self', can: owner, m: m({ role: 'owner', self: true }), change: false, remove: false },
    { name: 'admin on viewer', can: admin, m: m({ role: 'viewer' }), change: true, remove: true },
    { name: 'admin on admin', can: admin, m: m({ role: 'admin' }), change: false, remove: false },
    { name: 'admin on owner', can: admin, m: m({ role: 'owner' }), change: false, remove: false },
    { name: 'member on member', can: member, m: m({}), change: false, remove: false },
    { name: 'viewer on member', can: viewer, m: m({}), change: false, remove: false },
    { name: 'owner on removed', can: owner, m: m({ removed: true }), change: false, remove: false },
  ]
  for (const tt of tests) {
    assert.equal(mayChangeRole(tt.can, tt.m), tt.change, `${tt.name}: change`)
    assert.equal(mayRemove(tt.can, tt.m), tt.remove, `${tt.name}: remove`)
  }
})

test('who may readmit a removed device', () => {
  const tests: { name: string; can: Can; m: Member; want: boolean }[] = [
    { name: 'owner on removed member', can: owner, m: m({ removed: true }), want: true },
    { name: 'owner on removed admin', can: owner, m: m({ role: 'admin', removed: true }), want: true },
    { name: 'admin on removed viewer', can: admin, m: m({ role: 'viewer', removed: true }), want: true },
    { name: 'admin on removed admin', can: admin, m: m({ role: 'admin', removed: true }), want: false },
    { name: 'member on removed member', can: member, m: m({ removed: true }), want: false },
    { name: 'owner on a member', can: owner, m: m({}), want: false },
  ]
  for (const tt of tests) assert.equal(mayReadmit(tt.can, tt.m), tt.want, tt.name)
})

test('roles offered', () => {
  assert.deepEqual(rolesOffered(owner), ['owner', 'admin', 'member', 'viewer'])
  assert.deepEqual(rolesOffered(admin), ['member', 'viewer'])
  assert.deepEqual(rolesOffered(viewer), [])
  assert.deepEqual(inviteRolesOffered(owner), ['member', 'viewer', 'admin'])
  assert.deepEqual(inviteRolesOffered(admin), ['member', 'viewer'])
  assert.deepEqual(inviteRolesOffered(member), [])
})

test('revoke', () => {
  assert.equal(mayRevoke(admin, inv({})), true)
  assert.equal(mayRevoke(admin, inv({ role: 'admin' })), false)
  assert.equal(mayRevoke(owner, inv({ role: 'admin' })), true)
  assert.equal(mayRevoke(owner, inv({ state: 'revoked' })), false)
  assert.equal(mayRevoke(owner, inv({ state: 'expired' })), false)
  assert.equal(mayRevoke(member, inv({})), false)
})

test('member state and order', () => {
  assert.equal(memberState(m({ online: true })), 'online')
  assert.equal(memberState(m({})), 'offline')
  assert.equal(memberState(m({ online: true, removed: true })), 'removed')
  const got = sortMembers([
    m({ id: 'a', name: 'zed', role: 'viewer' }),
    m({ id: 'b', name: 'gone', removed: true, role: 'owner' }),
    m({ id: 'c', name: 'bob', role: 'owner' }),
    m({ id: 'd', name: 'me', role: 'viewer', self: true }),
    m({ id: 'e', name: 'amy', role: 'member' }),
  ]).map((x) => x.id)
  assert.deepEqual(got, ['d', 'c', 'e', 'a', 'b'])
})

test('invite labels', () => {
  assert.equal(usesLeftLabel(inv({})), 'unlimited')
  assert.equal(usesLeftLabel(inv({ uses: 3, used: 1, uses_left: 2 })), '2 of 3 left')
  assert.equal(usesLeftLabel(inv({ uses: 3, used: 3, uses_left: 0 })), '0 of 3 left')
  const now = Date.parse('2025-06-15T10:00:00Z')
  assert.equal(expiryRelative('2025-06-16T09:00:00Z', now), 'in 23 h')
  assert.equal(expiryRelative('2025-06-15T08:00:00Z', now), '2 h ago')
  assert.equal(expiryRelative('0001-01-01T00:00:00Z', now), 'never')
})

test('a join code says what it allows: how many machines, as what, until when', () => {
  const now = Date.parse('2025-06-15T10:00:00Z')
  const expires = '2025-06-16T10:00:00Z'
  const at = formatWhen(expires, { now }) // local time: the case holds in any zone
  const cases: [Partial<Invite>, string][] = [
    [{ uses: 1, uses_left: 1, expires }, `1 machine can join with it, as member, until ${at} (in 1 d).`],
    [{ uses: 3, used: 1, uses_left: 2, role: 'admin', expires }, `2 machines can join with it, as admin, until ${at} (in 1 d).`],
    // pool create's first code: unlimited for 24 h, which it says.
    [{ uses: 0, uses_left: -1, role: 'owner', expires }, `Any number of machines can join with it, as owner, until ${at} (in 1 d). Revoke it in Members once everyone has joined.`],
    [{ uses: 1, uses_left: 1, expires: '0001-01-01T00:00:00Z' }, '1 machine can join with it, as member, and it does not expire.'],
  ]
  for (const [over, want] of cases) assert.equal(inviteTerms(inv(over), now), want)
})

test('short IDs', () => {
  assert.equal(shortID('K7Q2MX4PAB3CDEF5'), 'K7Q2-MX4P')
  assert.equal(shortID('K7Q2MX4-PAB3CDE-F5'), 'K7Q2-MX4P')
  assert.equal(shortID('ABC'), 'ABC')
})

test('why no launch', () => {
  const pool = (can?: Can, self_role?: PoolStatus['self_role']): PoolStatus => ({ pool_id: 'p', members: [], can, self_role })
  assert.equal(whyNoLaunch(null), '')
  assert.equal(whyNoLaunch(pool()), '', 'an older daemon: the button stays')
  assert.equal(whyNoLaunch(pool(member)), '')
  assert.equal(whyNoLaunch(pool(viewer, 'viewer')), 'Viewers watch the pool.')
  assert.match(whyNoLaunch(pool({ ...viewer, why: '' }, 'viewer')), /viewer/)
  assert.deepEqual(canOf(null), { launch: false, manage_members: false, manage_admins: false })
  assert.equal(canOf(pool(owner)).manage_admins, true)
})

test('invite order', () => {
  const got = sortInvites([
    inv({ id: 'old', created_at: '2025-06-01T00:00:00Z' }),
    inv({ id: 'revoked', state: 'revoked', created_at: '2025-06-03T00:00:00Z' }),
    inv({ id: 'new', created_at: '2025-06-02T00:00:00Z' }),
    inv({ id: 'expired', state: 'expired', created_at: '2025-06-04T00:00:00Z' }),
  ]).map((i) => i.id)
  assert.deepEqual(got, ['new', 'old', 'expired', 'revoked'])
})

test('mayActOnJob: the owner, admins and the machine that runs the job', () => {
  const base = { pool_id: 'p', members: [], invites: [], self_id: 'ME', self_role: 'member' }
  const member = { ...base, can: { launch: true, manage_members: false, manage_admins: false } } as PoolStatus
  const admin = { ...base, self_role: 'admin', can: { launch: true, manage_members: true, manage_admins: false } } as PoolStatus
  const other = { owner: 'YOU', node: 'LAB1' }
  assert.equal(mayActOnJob(member, { owner: 'ME', node: 'LAB1' }), true)
  assert.equal(mayActOnJob(member, other), false)
  assert.equal(mayActOnJob(member, { owner: 'YOU', node: 'ME' }), true)
  assert.equal(mayActOnJob(admin, other), true)
  assert.equal(mayActOnJob(null, other), true)
})
