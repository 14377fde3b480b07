import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Cluster, ClusterQueueJob } from '../api/types.ts'
import { formatTimeLimit, gpuSum, gpuText, parseTimeLimit, partitionLabel, pendingReason, queueOwner, queueShown, readText, runtimeNote, stateTone, timeLimitHint } from './cluster.ts'

test('gpuSum and gpuText sum and word GPUs by type', () => {
  const gs = [
    { type: 'a100', total: 4, alloc: 3 },
    { type: '', total: 2, alloc: 0 },
  ]
  assert.deepEqual(gpuSum(gs), { total: 6, alloc: 3, free: 3 })
  assert.equal(gpuText(gs), 'a100 3/4 · gpu 0/2')
  assert.equal(gpuText(null), 'no GPU')
  assert.deepEqual(gpuSum([{ type: 'x', total: 2, alloc: 5 }]), { total: 2, alloc: 2, free: 0 }, 'a count over the total is clamped')
})

test('stateTone reads sinfo states with their flags', () => {
  for (const [s, want] of [
    ['up', 'ok'], ['idle', 'ok'], ['mixed', 'ok'], ['allocated', 'warn'], ['mixed+drain', 'warn'], ['draining', 'warn'],
    ['drained', 'bad'], ['down', 'bad'], ['idle*', 'bad'], ['inactive', 'bad'], ['DOWN+NOT_RESPONDING', 'bad'],
  ] as const) {
    assert.equal(stateTone(s), want, s)
  }
})

test('queueOwner names a member only where the Service vouched for it', () => {
  const n = { cluster_owners: { 'MIKE-1': 'mike' } }
  assert.deepEqual(queueOwner(n, { owner: 'MIKE-1', user: 'lab' }), { name: 'mike', labpool: true })
  assert.deepEqual(queueOwner(n, { owner: 'ALICE-2', user: 'lab' }), { name: 'lab', labpool: false }, 'a comment alone names no one')
  assert.deepEqual(queueOwner({}, { user: 'ben' }), { name: 'ben', labpool: false })
})

test('queueShown puts running jobs first and keeps n', () => {
  const q = (id: string, state: string): ClusterQueueJob => ({ id, state, name: id, user: 'u', partition: 'p', gpus: 0, submitted: '' })
  const c = { queue: [q('1', 'PENDING'), q('2', 'RUNNING'), q('3', 'PENDING'), q('4', 'RUNNING')] }
  assert.deepEqual(queueShown(c, 3).map((j) => j.id), ['2', '4', '1'])
  assert.deepEqual(queueShown({ queue: null }, 3), [])
})

test('pendingReason drops None', () => {
  assert.equal(pendingReason({ state: 'PENDING', reason: 'Resources' }), 'Resources')
  assert.equal(pendingReason({ state: 'RUNNING', reason: 'None' }), '')
})

test('runtimeNote says how images run, or that none do', () => {
  assert.match(runtimeNote({ containers: ['pyxis'] }, 'hpc'), /hpc runs images through pyxis/)
  assert.match(runtimeNote({ containers: [] }, 'hpc'), /hpc runs command jobs only/)
})

test('partitionLabel', () => {
  const p = { name: 'gpu', default: true, state: 'up', nodes: [], cpus: 0, gpus: [{ type: 'a100', total: 8, alloc: 3 }], max_time_s: 172800 }
  assert.equal(partitionLabel(p), 'gpu (default) · a100 3/8 · up to 2-00:00:00')
  assert.equal(partitionLabel({ ...p, default: false, state: 'down', max_time_s: 0 }), 'gpu · down · a100 3/8')
})

test('parseTimeLimit reads what labpool run --time reads', () => {
  const cases: [string, number | null][] = [
    ['2h', 7200], ['90m', 5400], ['1h30m', 5400], ['90', 5400], ['30:00', 1800], ['2:00:00', 7200],
    ['1-12:00:00', 129600], ['1-12', 129600], ['2-0:30', 174600], ['0', null], ['', null], ['soon', null], ['1:2:3:4', null], ['-2h', null],
  ]
  for (const [s, want] of cases) assert.equal(parseTimeLimit(s), want, s)
})

test('formatTimeLimit writes what sbatch reads', () => {
  assert.equal(formatTimeLimit(7200), '2:00:00')
  assert.equal(formatTimeLimit(5400), '1:30:00')
  assert.equal(formatTimeLimit(129600), '1-12:00:00')
})

// The card's fixture shape compiles against the generated type.
export const sample: Cluster = { name: 'hpc', version: '', partitions: [], nodes: [], gpus: [], queue: [], running: 0, pending: 0, read: '' }

test('timeLimitHint says what an empty time limit gives, in a few characters', () => {
  assert.equal(timeLimitHint({ default_time_s: 3600, max_time_s: 172800 }), 'default 1:00:00')
  assert.equal(timeLimitHint({ max_time_s: 172800 }), 'max 2-00:00:00')
  assert.equal(timeLimitHint({}), 'none · e.g. 2h')
  assert.equal(timeLimitHint(null), 'none · e.g. 2h')
})

test('readText says the card\'s time is its last change, not its last read', () => {
  const now = Date.parse('2026-11-28T10:06:00Z')
  const c = { read: '2026-11-28T10:00:00Z' }
  // A live cluster read every 5 s whose figures last changed 6 min ago.
  assert.equal(readText(c, true, now), 'unchanged for 6 min')
  assert.doesNotMatch(readText(c, true, now), /^read 6/)
  assert.equal(readText(c, false, now), 'last known, read 6 min ago or later')
  assert.equal(readText({ read: '2026-11-28T10:06:00Z' }, true, now), 'read just now')
  assert.equal(readText({ read: '' }, true, now), 'not read yet')
})
