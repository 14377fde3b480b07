import assert from 'node:assert/strict'
import { test } from 'node:test'
import { addSample, averageRate, timeLeft, transferRate, windowRate, type Sample } from './transfers.ts'

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

test('transferRate shows no rate on a running copy\'s first tick', () => {
  const now = Date.parse('2026-11-28T10:00:00.020Z')
  // Started 20 ms ago by the receiver's clock, 512 GiB done already
  // (the copy found them in place, or the clocks differ).
  const t = { state: 'running', started: '2026-11-28T10:00:00Z', finished: null, progress: { done: 512 * 2 ** 30, bytes: 2 ** 40, sent: 2 ** 30 } } as never
  const first = addSample([], { at: now, done: 512 * 2 ** 30 })
  assert.equal(transferRate(t, first, now), null)
  const second = addSample(first, { at: now + 1000, done: 512 * 2 ** 30 + 100 * 2 ** 20 })
  assert.equal(transferRate(t, second, now + 1000), 100 * 2 ** 20)
  const done = { state: 'done', started: '2026-11-28T10:00:00Z', finished: '2026-11-28T10:00:10Z', progress: { done: 10, bytes: 10, sent: 10 } } as never
  assert.equal(transferRate(done, [], now), 1)
  const lookedOnly = { state: 'done', started: '2026-11-28T10:00:00Z', finished: '2026-11-28T10:00:10Z', progress: { done: 10, bytes: 10, sent: 0 } } as never
  assert.equal(transferRate(lookedOnly, [], now), null)
})
