import assert from 'node:assert/strict'
import { test } from 'node:test'
import { barWidths, csvField, formatHours, reportCSV, reportFileName, reportLegend, type ReportLike, type ReportRow } from './report.ts'

const row = (key: string, label: string, granted: number, used: number, idle: number, kwh: number): ReportRow => ({
  key,
  label,
  gpu_hours_granted: granted,
  gpu_hours_used: used,
  idle_granted_hours: idle,
  unmeasured_hours: 0,
  energy_kwh: kwh,
  energy_total_kwh: kwh * 2,
  energy_source: kwh ? 'counter' : '',
  reserved_unused_hours: 0,
})

test('csvField escapes and defuses formulas as the CLI does', () => {
  assert.equal(csvField('alice'), 'alice')
  assert.equal(csvField('a,b'), '"a,b"')
  assert.equal(csvField('say "hi"'), '"say ""hi"""')
  assert.equal(csvField('two\nlines'), '"two\nlines"')
  assert.equal(csvField(' lead'), '" lead"')
  assert.equal(csvField('=HYPERLINK("x")'), `"'=HYPERLINK(""x"")"`)
  assert.equal(csvField('-1'), "'-1")
  assert.equal(csvField(1.23456), '1.23456')
  assert.equal(csvField(NaN), '')
})

test('reportCSV has the columns of labpool report --csv', () => {
  const r: ReportLike = {
    by: 'member',
    since: '2026-11-17T00:00:00Z',
    until: '2026-11-24T00:00:00Z',
    rows: [row('K7Q2', 'alice, lab', 10, 6.5, 2, 1.25), row('ZZ9', 'bob', 4, 1, 3, 0)],
    totals: row('', '', 14, 7.5, 5, 1.25),
  }
  assert.equal(
    reportCSV(r),
    'key,label,gpu_hours_granted,gpu_hours_used,idle_granted_hours,unmeasured_hours,energy_kwh,energy_total_kwh,energy_source,reserved_unused_hours\n' +
      'K7Q2,"alice, lab",10,6.5,2,0,1.25,2.5,counter,0\n' +
      'ZZ9,bob,4,1,3,0,0,0,,0\n' +
      ',total,14,7.5,5,0,1.25,2.5,counter,0\n',
  )
  assert.equal(reportFileName(r), 'labpool-report-member-2026-11-17-2026-11-24.csv')
  assert.equal(reportCSV({ ...r, rows: null }).split('\n').length, 3)
})

test('barWidths and formatHours', () => {
  assert.deepEqual(barWidths([row('a', 'a', 10, 5, 2, 0), row('b', 'b', 5, 5, 0, 0), row('c', 'c', 2, 1, 4, 0)]), [
    { granted: 100, used: 50, idle: 20, unmeasured: 0 },
    { granted: 50, used: 50, idle: 0, unmeasured: 0 },
    { granted: 20, used: 10, idle: 10, unmeasured: 0 },
  ])
  assert.deepEqual(barWidths([row('a', 'a', 0, 0, 0, 0)]), [{ granted: 0, used: 0, idle: 0, unmeasured: 0 }])
  // A running job not sampled yet: its unmeasured part shows, cut to what is left.
  assert.deepEqual(barWidths([{ ...row('a', 'a', 10, 2, 3, 0), unmeasured_hours: 4 }, { ...row('b', 'b', 5, 2, 1, 0), unmeasured_hours: 9 }]), [
    { granted: 100, used: 20, idle: 30, unmeasured: 40 },
    { granted: 50, used: 20, idle: 10, unmeasured: 20 },
  ])
  assert.equal(formatHours(0), '0')
  assert.equal(formatHours(1.234), '1.23')
  assert.equal(formatHours(42.25), '42.3')
  assert.equal(formatHours(1234.5), '1235')
})

test('reportLegend says what each figure counts, from the columns of the report', () => {
  const held = ['jobs', 'shares (fraction)', 'MIG (fraction)', 'cluster jobs']
  const columns = [
    { field: 'gpu_hours_granted', title: 'GPU-h', includes: held },
    { field: 'gpu_hours_used', title: 'used', includes: held },
    { field: 'reserved_unused_hours', title: 'reserved-unused', includes: ['reservations'] },
  ]
  assert.equal(reportLegend(columns), 'GPU-h: jobs, shares (fraction), MIG (fraction), cluster jobs; reserved-unused: reservations')
  assert.equal(reportLegend(null), '')
})
