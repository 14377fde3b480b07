import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formatAgo, formatBytes, formatClock, formatDate, formatDay, formatDuration, formatPercent, formatRate, formatSpan, formatTick, formatWhen, noun, percentOf, plural, type TimeLike, type WhenOptions } from './format.ts'

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

// Local times built from local fields, so the cases hold in any time zone.
const local = (y: number, mo: number, d: number, h = 0, mi = 0, s = 0) => new Date(y, mo - 1, d, h, mi, s)
const now = local(2026, 6, 20, 12).getTime()

test('formatWhen: one style for every absolute time', () => {
  const cases: [TimeLike, WhenOptions, string][] = [
    [local(2026, 6, 15, 10, 32), { now }, '15 Jun, 10:32'],
    [local(2026, 6, 15, 9, 5, 7), { now }, '15 Jun, 09:05'],
    [local(2026, 6, 15, 9, 5, 7), { now, seconds: true }, '15 Jun, 09:05:07'],
    [local(2026, 1, 1, 0, 0), { now }, '1 Jan, 00:00'],
    [local(2025, 12, 31, 23, 59), { now }, '31 Dec 2025, 23:59'], // another year says it
    [local(2026, 6, 15, 10, 32).getTime(), { now }, '15 Jun, 10:32'], // ms
    [local(2026, 6, 15, 10, 32).toISOString(), { now }, '15 Jun, 10:32'], // RFC 3339, as Go sends
    ['0001-01-01T00:00:00Z', { now }, '—'], // Go's zero time
    ['', { now }, '—'],
    ['not a time', { now }, '—'],
    [null, { now }, '—'],
    [undefined, { now }, '—'],
    [0, { now }, '—'],
    [NaN, { now }, '—'],
  ]
  for (const [t, o, want] of cases) assert.equal(formatWhen(t, o), want, `formatWhen(${String(t)}, ${JSON.stringify(o)})`)
})

test('formatClock', () => {
  assert.equal(formatClock(local(2026, 3, 4, 14, 2)), '14:02')
  assert.equal(formatClock(local(2026, 3, 4, 7, 2, 9), { seconds: true }), '07:02:09')
  assert.equal(formatClock(undefined), '—')
  assert.equal(formatClock('0001-01-01T00:00:00Z'), '—')
})

test('formatSpan drops the second day within one day', () => {
  assert.equal(formatSpan(local(2026, 6, 15, 10), local(2026, 6, 15, 12, 30), { now }), '15 Jun, 10:00 – 12:30')
  assert.equal(formatSpan(local(2026, 6, 15, 10), local(2026, 6, 16, 9), { now }), '15 Jun, 10:00 – 16 Jun, 09:00')
  assert.equal(formatSpan(local(2025, 12, 31, 22), local(2026, 1, 1, 2), { now }), '31 Dec 2025, 22:00 – 1 Jan, 02:00')
  assert.equal(formatSpan(local(2026, 6, 15, 10), null, { now }), '—')
})

test('formatDay', () => {
  assert.equal(formatDay(local(2026, 3, 24)), 'Tue 24')
  assert.equal(formatDay(local(2026, 3, 29, 23, 59)), 'Sun 29')
  assert.equal(formatDay(null), '—')
})

test('formatDate and formatTick', () => {
  assert.equal(formatDate(local(2026, 6, 15, 10, 32), { now }), '15 Jun')
  assert.equal(formatDate(local(2024, 2, 29), { now }), '29 Feb 2024')
  assert.equal(formatDate(undefined), '—')
  const t = local(2026, 6, 15, 10, 32, 5).getTime()
  assert.equal(formatTick(t, 10), '10:32:05')
  assert.equal(formatTick(t, 60), '10:32')
  assert.equal(formatTick(t, 3600), '10:32')
  assert.equal(formatTick(t, 86400, { now }), '15 Jun')
})

test('plural: one noun for one, the plural for every other count', () => {
  const cases: [number, string, string | undefined, string][] = [
    [0, 'file', undefined, '0 files'],
    [1, 'file', undefined, '1 file'],
    [2, 'file', undefined, '2 files'],
    [1, 'use', undefined, '1 use'],
    [5, 'use', undefined, '5 uses'],
    [1, 'process', 'processes', '1 process'],
    [3, 'process', 'processes', '3 processes'],
    [1.5, 'GPU', undefined, '1.5 GPUs'],
    [-1, 'day', undefined, '-1 days'],
  ]
  for (const [n, one, many, want] of cases) assert.equal(plural(n, one, many), want, `plural(${n}, ${one})`)
  assert.equal(noun(1, 'machine'), 'machine')
  assert.equal(noun(7, 'machine'), 'machines')
})
