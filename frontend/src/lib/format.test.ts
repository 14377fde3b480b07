import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formatAgo, formatBytes, formatDuration, formatPercent, formatRate, percentOf } from './format.ts'

test('formatBytes', () => {
  const cases: [number | null | undefined, string][] = [
    [0, '0 B'],
    [512, '512 B'],
    [1023, '1023 B'],
    [1024, '1.0 KiB'],
    [1536, '1.5 KiB'],
    [80 * 1024 ** 3, '80.0 GiB'],
    [24 * 1024 ** 3 + 400 * 1024 ** 2, '24.4 GiB'],
    [512 * 1024 ** 3, '512 GiB'],
    [2 * 1024 ** 4, '2.0 TiB'],
    [-1, '—'],
    [NaN, '—'],
    [null, '—'],
    [undefined, '—'],
  ]
  for (const [n, want] of cases) assert.equal(formatBytes(n), want, `formatBytes(${n})`)
})

test('formatRate', () => {
  assert.equal(formatRate(0), '0 B/s')
  assert.equal(formatRate(1.5 * 1024 * 1024), '1.5 MiB/s')
  assert.equal(formatRate(undefined), '—')
})

test('formatDuration', () => {
  const cases: [number, string][] = [
    [-3, '0 s'],
    [0, '0 s'],
    [42.9, '42 s'],
    [59, '59 s'],
    [60, '1 min'],
    [3599, '59 min'],
    [3600, '1 h'],
    [3600 + 5 * 60, '1 h 5 min'],
    [49 * 3600, '2 d'],
  ]
  for (const [s, want] of cases) assert.equal(formatDuration(s), want, `formatDuration(${s})`)
})

test('formatAgo', () => {
  const now = Date.parse('2025-01-01T12:00:42Z')
  assert.equal(formatAgo('2025-01-01T12:00:00Z', now), '42 s ago')
  assert.equal(formatAgo('2025-01-01T11:58:00Z', now), '2 min ago')
  assert.equal(formatAgo('2025-01-01T12:00:42.5Z', now), 'just now') // peer clock a bit ahead
  assert.equal(formatAgo('0001-01-01T00:00:00Z', now), 'never')
  assert.equal(formatAgo('', now), 'never')
  assert.equal(formatAgo('garbage', now), 'never')
})

test('formatPercent and percentOf', () => {
  assert.equal(formatPercent(37.4), '37%')
  assert.equal(formatPercent(120), '100%')
  assert.equal(formatPercent(-5), '0%')
  assert.equal(formatPercent(NaN), '—')
  assert.equal(percentOf(1, 4), 25)
  assert.equal(percentOf(5, 0), 0)
  assert.equal(percentOf(9, 4), 100)
})
