import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Node } from '../api/types.ts'
import { allPeersOffline, fromStoppedDaemon, normalizeNode, osArch, poolSummary, shortID, sortNodes } from './nodes.ts'

function node(p: Partial<Node>): Node {
  return {
    id: 'id',
    short_id: '',
    name: '',
    self: false,
    online: true,
    stale: false,
    addresses: [],
    last_seen: '',
    info: {
      hostname: '',
      os: '',
      kernel: '',
      cpu_model: '',
      cores: 0,
      mem_total_bytes: 0,
      version: '',
      started_at: '',
      goos: '',
      arch: '',
      boot_time: '',
    },
    gpus: [],
    ...p,
  }
}

test('sortNodes puts self first, then by name (numeric aware)', () => {
  const got = sortNodes([
    node({ id: 'c', name: 'lab10' }),
    node({ id: 'b', name: 'lab2' }),
    node({ id: 'z', name: 'zeta', self: true }),
    node({ id: 'a', name: 'Lab2' }),
  ])
  assert.deepEqual(
    got.map((n) => n.id),
    ['z', 'a', 'b', 'c'],
  )
})

test('sortNodes puts GPU machines first, a GPU-less self after them', () => {
  const gpu = [{ uuid: 'g' }] as Node['gpus']
  const got = sortNodes([
    node({ id: 'laptop', name: 'alice-laptop', self: true }),
    node({ id: 'b', name: 'lab2', gpus: gpu }),
    node({ id: 'mac', name: 'bob-mac' }),
    node({ id: 'a', name: 'dgx1', gpus: gpu }),
  ])
  assert.deepEqual(
    got.map((n) => n.id),
    ['a', 'b', 'laptop', 'mac'],
  )
})

test('allPeersOffline', () => {
  const me = node({ self: true })
  assert.equal(allPeersOffline([me]), false, 'no peers: nothing to warn about')
  assert.equal(allPeersOffline([me, node({ online: false }), node({ online: true })]), false)
  assert.equal(allPeersOffline([me, node({ online: false }), node({ online: false })]), true)
})

test('normalizeNode replaces Go nulls', () => {
  const n = normalizeNode(
    node({
      gpus: null,
      addresses: null,
      host: {
        cpu_percent: 1,
        load1: 0,
        mem_used_bytes: 0,
        mem_total_bytes: 0,
        disks: null,
        net_rx_bps: 0,
        net_tx_bps: 0,
      },
    }),
  )
  assert.deepEqual(n.gpus, [])
  assert.deepEqual(n.addresses, [])
  assert.deepEqual(n.host?.disks, [])
  assert.equal(normalizeNode(node({ host: undefined })).host, null)
})

test('shortID', () => {
  assert.equal(shortID({ id: 'ABCDEFGHIJKL', short_id: 'K7Q2-MX4P' }), 'K7Q2-MX4P')
  assert.equal(shortID({ id: 'ABCDEFGHIJKL', short_id: '' }), 'ABCDEFGHI')
})

test('osArch names the OS and architecture as people say them', () => {
  const cases: [string, string, string][] = [
    ['darwin', 'arm64', 'macOS/arm64'],
    ['windows', 'amd64', 'Windows/amd64'],
    ['linux', 'arm64', 'linux/arm64'],
    ['freebsd', '', 'freebsd'],
    ['', 'amd64', ''],
  ]
  for (const [goos, arch, want] of cases) {
    const n = node({})
    assert.equal(osArch({ ...n.info, goos, arch }), want, `${goos}/${arch}`)
  }
})

test('poolSummary counts no machine online while the daemon is unreachable', () => {
  const nodes = [node({ id: 'a', self: true }), node({ id: 'b' }), node({ id: 'c', online: false })]
  assert.deepEqual(poolSummary(nodes, false, 4), { online: 2, total: 3, gpus: 4, lastKnown: false })
  // The cards are last known: "2/3 online" would claim a liveness nobody saw.
  assert.deepEqual(poolSummary(nodes, true, 4), { online: 0, total: 3, gpus: 4, lastKnown: true })
})

test('fromStoppedDaemon tells the replica\'s last known pool from a live one', () => {
  const live = [node({ id: 'a', self: true }), node({ id: 'b', online: false })]
  assert.equal(fromStoppedDaemon(live), false)
  const lastKnown = [node({ id: 'a', self: true, online: false, stale: true }), node({ id: 'b', online: false, stale: true })]
  assert.equal(fromStoppedDaemon(lastKnown), true)
  assert.equal(fromStoppedDaemon([]), false)
})
