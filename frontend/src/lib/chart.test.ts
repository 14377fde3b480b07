import assert from 'node:assert/strict'
import { test } from 'node:test'
import { chartData, formatValue, gapIndexes, gpuCharts, hasBands, stack, tierLabel, windowRange, zoomWindow, type SeriesColumns } from './chart.ts'

const series = (over: Partial<SeriesColumns> = {}): SeriesColumns => ({
  tier: '1m',
  step_seconds: 60,
  times: [0, 60, 120],
  metrics: [
    { name: 'util_percent', unit: '%', min: [0, 10, 20], mean: [5, 50, 60], max: [100, 90, 80] },
    { name: 'mem_util_percent', unit: '%', min: [1, 1, 1], mean: [2, 2, 2], max: [3, 3, 3] },
  ],
  ...over,
})

test('chartData: a coarse tier gives mean, min and max columns per metric', () => {
  const d = chartData(series(), gpuCharts[0])
  assert.equal(d.bands, true)
  assert.deepEqual(d.columns[0], [0, 60, 120])
  assert.deepEqual(d.layout, [
    { name: 'util_percent', label: 'GPU', mean: 1, min: 2, max: 3, present: true },
    { name: 'mem_util_percent', label: 'memory bus', mean: 4, min: 5, max: 6, present: true },
  ])
  assert.deepEqual(d.columns[1], [5, 50, 60])
  assert.deepEqual(d.columns[2], [0, 10, 20])
  assert.deepEqual(d.columns[3], [100, 90, 80])
})

test('chartData: the 1 s tier has no bands', () => {
  const d = chartData(series({ tier: '1s', step_seconds: 1, times: [0, 1, 2] }), gpuCharts[0])
  assert.equal(d.bands, false)
  assert.equal(d.columns.length, 3)
  assert.equal(d.layout[0].min, null)
  assert.equal(hasBands({ step_seconds: 1 }), false)
  assert.equal(hasBands({ step_seconds: 900 }), true)
})

test('chartData: a gap of missing points breaks the lines', () => {
  const s = series({
    times: [0, 60, 600, 660],
    metrics: [{ name: 'util_percent', unit: '%', min: [1, 2, 3, 4], mean: [1, 2, 3, 4], max: [1, 2, 3, 4] }],
  })
  const d = chartData(s, gpuCharts[0])
  assert.deepEqual(d.columns[0], [0, 60, 120, 600, 660])
  assert.deepEqual(d.columns[1], [1, 2, null, 3, 4])
  assert.deepEqual(d.columns[2], [1, 2, null, 3, 4])
  // A metric the Series lacks draws nothing, at the same length.
  assert.deepEqual(d.columns[4], [null, null, null, null, null])
  assert.equal(d.layout[1].present, false)
  // One missing 1 s sample is jitter, not a gap.
  assert.deepEqual(gapIndexes([0, 1, 3, 4, 10], 1), [3])
})

test('chartData: an empty Series', () => {
  const d = chartData({ tier: '1s', step_seconds: 1, times: null, metrics: null }, gpuCharts[0])
  assert.deepEqual(d.columns, [[], [], []])
})

test('zoomWindow', () => {
  const now = 1_000_000
  assert.deepEqual(zoomWindow(now - 3600, now - 1800, now), { since: 1800, until: now - 1800 })
  assert.deepEqual(zoomWindow(now - 3600.5, now - 1800.5, now), { since: 1800, until: now - 1800 })
  assert.deepEqual(zoomWindow(now - 600, now + 5, now), { since: 600, until: 0 })
  // Too narrow: widened to a minute around its middle.
  assert.deepEqual(zoomWindow(now - 110, now - 100, now), { since: 60, until: now - 75 })
  assert.equal(zoomWindow(5, 5, now), null)
  assert.equal(zoomWindow(NaN, 5, now), null)
  assert.deepEqual(windowRange({ since: 600, until: 0 }, now), [now - 600, now])
  assert.deepEqual(windowRange({ since: 540, until: now - 60 }, now), [now - 600, now - 60])
})

test('stack', () => {
  assert.deepEqual(
    stack([
      [1, 2, null],
      [3, 0, 1],
      [4, 4, 4],
    ]),
    [
      [1, 2, null],
      [4, 2, 1],
      [8, 6, 5],
    ],
  )
})

test('formatValue and tierLabel', () => {
  assert.equal(formatValue(55.4, 'percent'), '55%')
  assert.equal(formatValue(2.25, 'percent'), '2.3%')
  assert.equal(formatValue(null, 'percent'), '—')
  assert.equal(formatValue(1410, 'mhz'), '1.41 GHz')
  assert.equal(formatValue(405, 'mhz'), '405 MHz')
  assert.equal(formatValue(84.6, 'celsius'), '85 °C')
  assert.equal(formatValue(3, 'count'), '3')
  assert.equal(tierLabel('1s', 1), 'each point one sample')
  assert.match(tierLabel('15m', 900), /15 min/)
  assert.match(tierLabel('3h', 10800), /3 h/)
})
