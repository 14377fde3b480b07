import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Sample } from '../api/types.ts'
import { mean, mergeWindow, toColumns, toPoint, trimWindow, windowSeconds, type Point } from './series.ts'

const pt = (t: number, cpu = t): Point => ({ t, cpu, gpu: null })
const times = (ps: Point[]) => ps.map((p) => p.t)

test('mean', () => {
  assert.equal(mean([]), null)
  assert.equal(mean(null), null)
  assert.equal(mean([10, 30]), 20)
})

test('toPoint', () => {
  const s: Sample = {
    node: 'n',
    time: '2025-01-01T00:00:10Z',
    cpu_percent: 12,
    mem_percent: 40,
    gpu_util: [50, 100],
    gpu_mem_pct: null,
  }
  assert.deepEqual(toPoint(s), { t: Date.parse('2025-01-01T00:00:10Z') / 1000, cpu: 12, gpu: 75 })
  assert.deepEqual(toPoint({ ...s, gpu_util: null })?.gpu, null)
  assert.equal(toPoint({ ...s, time: 'nope' }), null)
})

test('trimWindow drops points older than the span before the newest', () => {
  const ps = [pt(0), pt(100), pt(200), pt(301), pt(400)]
  assert.deepEqual(times(trimWindow(ps)), [100, 200, 301, 400])
  assert.deepEqual(times(trimWindow(ps, 150)), [301, 400])
  assert.deepEqual(times(trimWindow(ps, windowSeconds, 1000)), [])
  assert.deepEqual(trimWindow([]), [])
})

test('mergeWindow appends in order and trims', () => {
  const w = [pt(1), pt(2)]
  const got = mergeWindow(w, [pt(3), pt(303)])
  assert.deepEqual(times(got), [3, 303])
  assert.deepEqual(times(w), [1, 2], 'input untouched')
})

test('mergeWindow replaces duplicates and sorts out-of-order points', () => {
  const got = mergeWindow([pt(10), pt(20), pt(30)], [pt(20, 99), pt(5), pt(25)])
  assert.deepEqual(times(got), [5, 10, 20, 25, 30])
  assert.equal(got.find((p) => p.t === 20)?.cpu, 99)
})

test('mergeWindow with an explicit reference', () => {
  const got = mergeWindow([], [pt(100), pt(200)], windowSeconds, 450)
  assert.deepEqual(times(got), [200])
})

test('a long run keeps at most 5 minutes', () => {
  let w: Point[] = []
  for (let t = 0; t < 1000; t++) w = mergeWindow(w, [pt(t)])
  assert.equal(w[0].t, 999 - windowSeconds)
  assert.equal(w.length, windowSeconds + 1)
})

test('toColumns', () => {
  assert.deepEqual(toColumns([{ t: 1, cpu: 2, gpu: 3 }, { t: 4, cpu: 5, gpu: null }]), [
    [1, 4],
    [2, 5],
    [3, null],
  ])
})
