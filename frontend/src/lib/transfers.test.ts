import assert from 'node:assert/strict'
import { test } from 'node:test'
import { addSample, averageRate, timeLeft, windowRate, type Sample } from './transfers.ts'

test('addSample keeps a window', () => {
  let w: Sample[] = []
  for (let i = 0; i <= 10; i++) w = addSample(w, { at: i * 1000, done: i * 100 }, 5000)
  assert.deepEqual(w.map((s) => s.at), [5000, 6000, 7000, 8000, 9000, 10000])
  assert.equal(windowRate(w), 100)
})

test('addSample restarts when bytes go down', () => {
  const w = addSample([{ at: 0, done: 500 }], { at: 1000, done: 10 })
  assert.deepEqual(w, [{ at: 1000, done: 10 }])
  assert.equal(windowRate(w), null)
})

test('addSample does not modify its input', () => {
  const w: Sample[] = [{ at: 0, done: 0 }]
  addSample(w, { at: 1000, done: 1 })
  assert.equal(w.length, 1)
})

test('windowRate', () => {
  assert.equal(windowRate([]), null)
  assert.equal(windowRate([{ at: 0, done: 0 }]), null)
  assert.equal(windowRate([{ at: 0, done: 0 }, { at: 0, done: 10 }]), null)
  assert.equal(windowRate([{ at: 0, done: 0 }, { at: 2000, done: 4096 }]), 2048)
})

test('averageRate', () => {
  const progress = { files: 1, files_done: 0, bytes: 1000, done: 500, sent: 500 }
  const started = '2025-01-01T00:00:00Z'
  const t0 = Date.parse(started)
  assert.equal(averageRate({ started, progress }, t0 + 5000), 100)
  assert.equal(averageRate({ started, finished: '2025-01-01T00:00:10Z', progress }, t0 + 60_000), 50)
  assert.equal(averageRate({ started: '0001-01-01T00:00:00Z', progress }, t0), null)
  assert.equal(averageRate({ started, progress }, t0), null)
})

test('timeLeft', () => {
  assert.equal(timeLeft(1000, 400, 100), 6)
  assert.equal(timeLeft(1000, 1200, 100), 0)
  assert.equal(timeLeft(0, 0, 100), null)
  assert.equal(timeLeft(1000, 0, 0), null)
  assert.equal(timeLeft(1000, 0, null), null)
})
