import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { GPU, Node } from '../api/types.ts'
import { denseRows, loadView, migText, saveView } from './dense.ts'

const gpu = (index: number, p: Partial<GPU> = {}) => ({ index, uuid: `g${index}`, name: 'NVIDIA A100', ...p }) as GPU
const node = (id: string, gpus: GPU[], p: Partial<Node> = {}) => ({ id, name: id, gpus, online: true, ...p }) as Node

test('denseRows gives each GPU a row and names its machine on the first', () => {
  const rows = denseRows([node('a', [gpu(1), gpu(0)]), node('laptop', []), node('hpc', [], { cluster: { name: 'hpc' } as Node['cluster'] })])
  assert.deepEqual(
    rows.map((r) => [r.node.id, r.gpu.index, r.first, r.rowSpan]),
    [
      ['a', 0, true, 2],
      ['a', 1, false, 2],
    ],
  )
})

test('denseRows fits 40 GPUs of five machines in 40 rows', () => {
  const nodes = ['a', 'b', 'c', 'd', 'e'].map((id) => node(id, Array.from({ length: 8 }, (_, i) => gpu(i))))
  assert.equal(denseRows(nodes).length, 40)
})

test('migText marks a GPU in MIG mode', () => {
  assert.equal(migText({ mig: null }), '')
  assert.equal(migText({ mig: { supported: true, enabled: false, pending: false, instances: null } }), '')
  assert.equal(migText({ mig: { supported: true, enabled: true, pending: false, instances: [{}, {}] as never } }), 'MIG · 2 instances')
  assert.equal(migText({ mig: { supported: true, enabled: false, pending: true, instances: null } }), 'MIG on pending')
})

test('the chosen view is remembered', () => {
  const m = new Map<string, string>()
  const store = { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v) }
  assert.equal(loadView(store), 'cards')
  saveView(store, 'dense')
  assert.equal(loadView(store), 'dense')
  assert.equal(loadView(null), 'cards')
  const refusing = {
    getItem: () => {
      throw new Error('denied')
    },
    setItem: () => {
      throw new Error('denied')
    },
  }
  assert.equal(loadView(refusing), 'cards')
  saveView(refusing, 'dense') // does not throw
})
