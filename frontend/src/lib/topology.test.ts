import assert from 'node:assert/strict'
import { test } from 'node:test'
import { migOf, placementNote, topologyMatrix } from './topology.ts'

const link = (peer: number, nvlinks: number, pcie: string) => ({ peer, nvlinks, pcie })

test('topologyMatrix writes NV# where GPUs share NVLink, else the PCIe relation', () => {
  const m = topologyMatrix([
    { index: 0, links: [link(1, 18, 'PIX'), link(2, 0, 'SYS')] },
    { index: 1, links: [link(0, 18, 'PIX'), link(2, 0, 'SYS')] },
    { index: 2, links: [link(0, 0, 'SYS')] },
  ])
  assert.ok(m)
  assert.deepEqual(m.gpus, [0, 1, 2])
  assert.deepEqual(
    m.rows.map((r) => r.map((c) => c.text)),
    [
      ['X', 'NV18', 'SYS'],
      ['NV18', 'X', 'SYS'],
      ['SYS', '–', 'X'],
    ],
  )
  assert.equal(m.rows[0][1].nvlink, true)
  assert.match(m.rows[0][2].title, /across NUMA nodes/)
})

test('topologyMatrix is null without links (an older daemon, one GPU)', () => {
  assert.equal(topologyMatrix([{ index: 0 }, { index: 1, links: [] }]), null)
  assert.equal(topologyMatrix([{ index: 0, links: [link(1, 4, 'PIX')] }]), null)
})

test('migOf lists modes and the instances of GPUs in MIG mode', () => {
  const got = migOf([
    { index: 0 },
    { index: 1, mig: { supported: true, enabled: false, pending: true, instances: [] } },
    {
      index: 2,
      mig: {
        supported: true,
        enabled: true,
        pending: false,
        instances: [{ uuid: 'MIG-a', name: 'NVIDIA A100 MIG 3g.20gb', gpu_instance: 1, compute_instance: 0, mem_total_bytes: 20 }, null],
      },
    },
  ])
  assert.deepEqual(got.modes, [
    { gpu: 1, mode: 'off (on after a reset)' },
    { gpu: 2, mode: 'on' },
  ])
  assert.deepEqual(got.instances, [{ gpu: 2, uuid: 'MIG-a', name: 'NVIDIA A100 MIG 3g.20gb', memBytes: 20, gi: 1, ci: 0 }])
})

test('placementNote promises NVLinked placement only where there is NVLink', () => {
  const pcieOnly = topologyMatrix([
    { index: 0, links: [{ peer: 1, nvlinks: 0, pcie: 'SYS' }] },
    { index: 1, links: [{ peer: 0, nvlinks: 0, pcie: 'SYS' }] },
  ])
  assert.ok(pcieOnly)
  assert.doesNotMatch(placementNote(pcieOnly), /NVLinked/)
  const nv = topologyMatrix([
    { index: 0, links: [{ peer: 1, nvlinks: 12, pcie: 'SYS' }] },
    { index: 1, links: [{ peer: 0, nvlinks: 12, pcie: 'SYS' }] },
  ])
  assert.ok(nv)
  assert.match(placementNote(nv), /NVLinked/)
})
