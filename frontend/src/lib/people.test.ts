import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Can, DeviceCode, Member, PoolStatus } from '../api/types.ts'
import { joinCommand, mayAddDevice, mergeTargets, mayChangePersonRole, mayReadmitDevice, mayReadmitPerson, mayRemoveDevice, mayRemovePerson, peopleOf } from './people.ts'

const owner: Can = { launch: true, manage_members: true, manage_admins: true }
const admin: Can = { launch: true, manage_members: true, manage_admins: false }
const member: Can = { launch: true, manage_members: false, manage_admins: false }

const m = (id: string, name: string, over: Partial<Member> = {}): Member => ({ id, name, role: 'member', added_at: '', removed: false, ...over })
const dev = (x: Member) => ({ id: x.id, name: x.name, online: !!x.online, self: !!x.self })

const dgx = m('A1', 'dgx', { role: 'owner', self: true, creator: true })
const lap = m('A2', 'alice-laptop', { role: 'owner', online: true })
const bws = m('B2', 'bob-ws', {})
const blap = m('B1', 'bob-laptop', { removed: true })
const carol = m('C1', 'carol-laptop', { role: 'admin', removed: true })
const pool: PoolStatus = {
  pool_id: 'p', invites: [], members: [dgx, lap, bws, blap, carol],
  people: [
    { id: 'B1', name: 'bob', role: 'member', active: true, self: false, devices: [dev(bws)], removed: [dev(blap)] },
    { id: 'C1', name: 'carol', role: 'admin', active: false, self: false, devices: [], removed: [dev(carol)] },
    { id: 'A1', name: 'alice', role: 'owner', active: true, self: true, devices: [dev(dgx), dev(lap)], removed: [] },
  ],
}

test('people: this machine\'s person first, removed people last, devices under them', () => {
  const got = peopleOf(pool).map((p) => `${p.name}:${p.devices.map((d) => d.name).join(',')}/${p.removed.map((d) => d.name).join(',')}`)
  assert.deepEqual(got, ['alice:dgx,alice-laptop/', 'bob:bob-ws/bob-laptop', 'carol:/carol-laptop'])
  const alice = peopleOf(pool)[0]
  assert.ok(alice.self && alice.creator && alice.active)
})

test('an older daemon sends no people: a person per device', () => {
  const got = peopleOf({ ...pool, people: undefined }).map((p) => `${p.name}:${p.active}`)
  assert.deepEqual(got, ['dgx:true', 'alice-laptop:true', 'bob-ws:true', 'bob-laptop:false', 'carol-laptop:false'])
})

test('who may act on a person and their devices', () => {
  const [alice, bob, carolP] = peopleOf(pool)
  const tests: { name: string; got: boolean; want: boolean }[] = [
    { name: 'an owner changes bob\'s role', got: mayChangePersonRole(owner, bob), want: true },
    { name: 'nobody changes the creator\'s role', got: mayChangePersonRole(owner, alice), want: false },
    { name: 'a member changes no role', got: mayChangePersonRole(member, bob), want: false },
    { name: 'an admin removes bob', got: mayRemovePerson(admin, bob), want: true },
    { name: 'no one removes their own person', got: mayRemovePerson(owner, alice), want: false },
    { name: 'an admin does not readmit an admin', got: mayReadmitPerson(admin, carolP), want: false },
    { name: 'an owner readmits an admin', got: mayReadmitPerson(owner, carolP), want: true },
    { name: 'an owner readmits bob\'s removed laptop', got: mayReadmitDevice(owner, bob, bob.removed[0]), want: true },
    { name: 'a member readmits no device', got: mayReadmitDevice(member, bob, bob.removed[0]), want: false },
    { name: 'alice, an owner, removes her laptop from the station', got: mayRemoveDevice(owner, alice, alice.devices[1]), want: true },
    { name: 'a member removes no device', got: mayRemoveDevice(member, alice, alice.devices[1]), want: false },
    { name: 'not this machine', got: mayRemoveDevice(owner, alice, alice.devices[0]), want: false },
    { name: 'not a person\'s last device', got: mayRemoveDevice(owner, bob, bob.devices[0]), want: false },
    { name: 'one adds a device to oneself', got: mayAddDevice(member, alice), want: true },
    { name: 'a member adds none to bob', got: mayAddDevice(member, bob), want: false },
    { name: 'an admin adds one to bob', got: mayAddDevice(admin, bob), want: true },
    { name: 'none to a removed person', got: mayAddDevice(owner, carolP), want: false },
  ]
  for (const t of tests) assert.equal(t.got, t.want, t.name)
})

test('the join command names this machine\'s address when it has one', () => {
  const dc: DeviceCode = {
    code: 'CODE', person: 'alice', addresses: ['10.0.0.1:7420', '[fd00::1]:7420'],
    invite: { id: 'i', role: 'owner', uses: 1, used: 0, uses_left: 1, expires: '', created_by: '', created_at: '', state: 'active' },
  }
  assert.equal(joinCommand(dc), 'labpool pool join CODE 10.0.0.1:7420')
  assert.equal(joinCommand({ ...dc, addresses: null }), 'labpool pool join CODE')
})

test('owners merge a person into another in the pool', () => {
  const [alice, bob, carolP] = peopleOf(pool)
  const all = peopleOf(pool)
  assert.deepEqual(mergeTargets(owner, bob, all).map((p) => p.name), ['alice'])
  assert.deepEqual(mergeTargets(admin, bob, all), [], 'an admin merges no one')
  assert.deepEqual(mergeTargets(owner, carolP, all), [], 'a removed person is merged into no one')
  assert.deepEqual(mergeTargets(owner, alice, all), [], 'the creator\'s person stays who they are')
})
