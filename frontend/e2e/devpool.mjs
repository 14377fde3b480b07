// DEV FIXTURE ONLY: the pool part of the local API for e2e/devserver.mjs,
// in memory: members with roles, invites, and refusals worded the way the
// daemon words them (403 {code: "forbidden", message: "<the rule>: ..."}).
//
// role: this machine's role ("owner" | "admin" | "member" | "viewer"), or ""
// to start outside a pool (create makes it the owner, join a member).
// shownRole: the role PoolStatus reports, when it should differ from the one
// enforced (a stale view: the UI offers what the daemon then refuses).
import { randomBytes } from 'node:crypto'

const roles = ['owner', 'admin', 'member', 'viewer']
const why = 'Viewers watch the pool: ask an admin to make this machine a member to launch jobs.'
const iso = (ms) => new Date(ms).toISOString()

class Refused extends Error {
  constructor(status, code, message) {
    super(message)
    this.status = status
    this.code = code
  }
}
const forbidden = (msg) => new Refused(403, 'forbidden', msg)

function canOf(role) {
  const launch = ['owner', 'admin', 'member'].includes(role)
  return {
    launch,
    manage_members: role === 'owner' || role === 'admin',
    manage_admins: role === 'owner',
    ...(launch || !role ? {} : { why }),
  }
}

/**
 * Creates the fixture's pool. machines: [{id, name}] with machines[0] this
 * machine; online(id) tells whether a machine answers now.
 */
export function createPool({ machines, online, role = '', shownRole = '' }) {
  const now = () => Date.now()
  const selfID = machines[0].id
  let poolID = ''
  let members = []
  let invites = []
  let selfRole = role
  const codes = new Map() // code -> invite ID

  const member = (id, name, r, over = {}) => ({
    id, name, role: r, added_at: iso(now() - 86400e3 * 3), added_by: machines[0].id, removed: false, creator: false, ...over,
  })
  const invite = (r, uses, used, expiresIn, state = 'active', over = {}) => {
    const inv = {
      id: randomBytes(4).toString('hex'), role: r, uses, used, expires: iso(now() + expiresIn * 1000),
      created_by: selfID, created_at: iso(now() - 3600e3), state, ...over,
    }
    const code = `lp1-${poolID.replace(/-/g, '')}-${randomBytes(16).toString('hex')}`
    codes.set(code, inv.id)
    invites.push(inv)
    return { inv, code }
  }

  function seed() {
    poolID = 'P3H7-QK2M-XV9T'
    const [lab1, lab2, lab3] = machines
    const creatorIsSelf = role === 'owner'
    members = [
      member(lab1.id, lab1.name, role, { creator: creatorIsSelf, added_at: iso(now() - 86400e3 * 9) }),
      member(lab2.id, lab2.name, creatorIsSelf ? 'admin' : 'owner', { creator: !creatorIsSelf, added_at: iso(now() - 86400e3 * 9) }),
      member(lab3.id, lab3.name, 'member'),
      member('A5NNL9PTQ2RSTUV3WXYZ4ABCD5EFGH6IJKL7MNOP2QRST3UVWX', 'anna-laptop', 'viewer', { added_at: iso(now() - 7200e3) }),
      member('M1KEQ4XRB7CDEF2GHIJ3KLMN4OPQR5STUV6WXYZ7ABCD2EFGH', 'mike-ws', 'member', { added_at: iso(now() - 86400e3) }),
      member('P1WSR6TNA3BCDE4FGHI5JKLM6NOPQ7RSTU2VWXY3ZABC4DEFG', 'pi-ws', 'owner', { added_at: iso(now() - 86400e3 * 8) }),
      member('Z0LDW3RKS8TUVW2XYZA3BCDE4FGHI5JKLM6NOPQ7RSTU2VWXY', 'old-ws', 'member', { removed: true, added_at: iso(now() - 86400e3 * 30) }),
    ]
    invite('member', 5, 2, 20 * 3600)
    invite('viewer', 0, 1, 6 * 86400)
    invite('member', 0, 0, -2 * 3600, 'expired')
    invite('admin', 1, 1, 3600, 'used up')
    invite('member', 3, 0, 12 * 3600, 'revoked')
  }
  if (role) seed()

  const view = (m) => ({ ...m, online: !m.removed && (machines.some((x) => x.id === m.id) ? online(m.id) : false), self: m.id === selfID })
  const inviteView = (inv) => {
    let state = inv.state
    if (state === 'active' && Date.parse(inv.expires) <= now()) state = 'expired'
    if (state === 'active' && inv.uses > 0 && inv.used >= inv.uses) state = 'used up'
    return { ...inv, state, uses_left: inv.uses > 0 ? Math.max(0, inv.uses - inv.used) : -1 }
  }

  function status() {
    const shown = poolID ? shownRole || selfRole : ''
    const can = canOf(shown)
    return {
      pool_id: poolID,
      members: poolID ? members.map(view) : null,
      invites: can.manage_members ? invites.map(inviteView) : [],
      self_id: selfID,
      self_role: shown,
      can: poolID ? can : { launch: true, manage_members: false, manage_admins: false },
    }
  }

  // The rules, as the daemon enforces them for this machine's real role.
  function mustManage(r) {
    const can = canOf(selfRole)
    if (!poolID) throw new Refused(409, 'conflict', 'not in a pool')
    if (!can.manage_members) throw forbidden('only admins and owners manage members and invites')
    if ((r === 'admin' || r === 'owner') && !can.manage_admins) throw forbidden('only owners manage admins and owners')
  }
  function target(id) {
    const m = members.find((x) => x.id === id && !x.removed)
    if (!m) throw new Refused(404, 'not_found', `no member ${id}`)
    return m
  }

  const routes = {
    create() {
      if (!poolID) {
        poolID = 'P3H7-QK2M-XV9T'
        selfRole = 'owner'
        members = [member(selfID, machines[0].name, 'owner', { creator: true, added_at: iso(now()) })]
        invites = []
      }
      // As the daemon: the first active invite, else a new one, unlimited for 24 h.
      const first = invites.find((i) => inviteView(i).state === 'active')
      if (first) return { pool_id: poolID, invite: inviteView(first), code: [...codes].find(([, id]) => id === first.id)[0] }
      const { inv, code } = invite('member', 0, 0, 86400)
      return { pool_id: poolID, invite: inviteView(inv), code }
    },
    join(req) {
      if (!req.code) throw new Refused(400, 'invalid', 'invalid: a join code is required')
      if (req.code === 'bad') throw forbidden('join pool: the join code was refused by 10.203.0.2:7443')
      poolID = 'J2W8-LP4R-MN6S'
      selfRole = 'member'
      members = machines.map((m, i) => member(m.id, m.name, i === 1 ? 'owner' : 'member', { creator: i === 1 }))
      return status()
    },
    invites() {
      mustManage('member')
      return invites.map(inviteView)
    },
    createInvite(req) {
      const r = req.role || 'member'
      if (!['member', 'viewer', 'admin'].includes(r)) throw new Refused(400, 'invalid', `invalid role ${JSON.stringify(r)}: want member, viewer or admin`)
      mustManage(r)
      const uses = Number(req.uses ?? 0)
      const secs = Number(req.expires_seconds ?? 86400)
      if (!Number.isInteger(uses) || uses < 0) throw new Refused(400, 'invalid', 'invalid uses: want 0 (unlimited) or more')
      if (!(secs > 0)) throw new Refused(400, 'invalid', 'invalid expiry: want a positive number of seconds')
      const { inv, code } = invite(r, uses, 0, secs, 'active', { created_at: iso(now()) })
      return { invite: inviteView(inv), code }
    },
    revokeInvite(id) {
      const inv = invites.find((i) => i.id === id)
      if (!inv) throw new Refused(404, 'not_found', `no invite ${id}`)
      mustManage(inv.role)
      const st = inviteView(inv).state
      if (st !== 'active') throw new Refused(409, 'conflict', `invite ${id} is already ${st}`)
      inv.state = 'revoked'
    },
    setRole(id, req) {
      const r = req.role
      if (!roles.includes(r)) throw new Refused(400, 'invalid', `invalid role ${JSON.stringify(r)}: want owner, admin, member or viewer`)
      const m = target(id)
      mustManage(m.role)
      mustManage(r)
      if (m.creator) throw forbidden("the pool's creator stays an owner")
      m.role = r
    },
    readmit(id) {
      const m = members.find((x) => x.id === id)
      if (!m || !m.removed) throw new Refused(404, 'not_found', `no removed device ${id}`)
      mustManage(m.role)
      m.removed = false
    },
    addDevice(req) {
      // A person per device here: a device is added to this machine's, or by a manager to another's.
      const m = req.for ? members.find((x) => x.name === req.for && !x.removed) : members.find((x) => x.id === selfID)
      if (!m) throw new Refused(404, 'not_found', `no person ${JSON.stringify(req.for)} in the pool`)
      if (m.id !== selfID) mustManage(m.role)
      const { inv, code } = invite(m.role, 1, 0, 3600, 'active', { created_at: iso(now()) })
      return { invite: inviteView(inv), code, person: m.name, addresses: ['10.203.0.1:7420'] }
    },
    remove(id) {
      const m = target(id)
      if (m.creator) throw forbidden("the pool's creator cannot be removed")
      if (m.role === 'owner' && selfRole === 'admin') throw forbidden('an admin cannot remove an owner')
      mustManage(m.role)
      m.removed = true
    },
  }

  /** The role this machine really has (for the jobs fixture's refusals). */
  const roleNow = () => (poolID ? selfRole : '')

  // Handles /api/v1/pool paths; returns false for other paths.
  async function handle(req, res, p, { json, fail, body, answer }) {
    const reply = (fn) => answer(res, fn)
    const readJSON = async () => JSON.parse((await body(req)) || '{}')
    const id = (re) => {
      const r = p.match(re)
      return r ? decodeURIComponent(r[1]) : null
    }
    let x
    if (req.method === 'GET' && p === '/pool') return reply(status), true
    if (req.method === 'POST' && p === '/pool/create') return reply(routes.create), true
    if (req.method === 'POST' && p === '/pool/join') return reply(async () => routes.join(await readJSON())), true
    if (req.method === 'GET' && p === '/pool/invites') return reply(routes.invites), true
    if (req.method === 'POST' && p === '/pool/devices') return reply(async () => routes.addDevice(await readJSON())), true
    if (req.method === 'POST' && p === '/pool/invites') return reply(async () => routes.createInvite(await readJSON())), true
    if (req.method === 'DELETE' && (x = id(/^\/pool\/invites\/([^/]+)$/))) return reply(() => routes.revokeInvite(x)), true
    if (req.method === 'PUT' && (x = id(/^\/pool\/members\/([^/]+)\/role$/))) return reply(async () => routes.setRole(x, await readJSON())), true
    if (req.method === 'POST' && (x = id(/^\/pool\/members\/([^/]+)\/readmit$/))) return reply(() => routes.readmit(x)), true
    if (req.method === 'DELETE' && (x = id(/^\/pool\/members\/([^/]+)$/))) return reply(() => routes.remove(x)), true
    return false
  }

  return { handle, status, role: roleNow }
}
