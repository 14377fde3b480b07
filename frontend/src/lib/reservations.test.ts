import assert from 'node:assert/strict'
import { test } from 'node:test'
import { labelPct, startOfDay, strip, type Reserved } from './reservations.ts'

const now = new Date(2026, 2, 24, 10, 0).getTime() // Tue 24 Mar 2026, 10:00 local
const at = (d: number, h: number) => new Date(2026, 2, d, h, 0).toISOString()
const r = (id: string, from: string, until: string, extra: Partial<Reserved> = {}): Reserved => ({
  id, node: 'N', from, until, gpus: [0, 1], state: 'accepted', member: 'ALICEALICEALICE', member_name: 'alice', ...extra,
})

test('strip places a reservation on its day', () => {
  const s = strip([r('a', at(26, 14), at(26, 17))], 'N', now, 7)
  assert.equal(s.days.length, 7)
  assert.equal(s.blocks.length, 1)
  const b = s.blocks[0]
  assert.equal(b.label, 'alice · GPU 0,1')
  assert.ok(b.left > s.days[2].left && b.left < s.days[3].left, `block at ${b.left}% is on Thursday`)
  assert.ok(b.width > 1 && b.width < 100 / 7 / 2, `3 h is ${b.width}%`)
})

test('strip leaves out other machines, cancelled and unbelieved ones, and the far future', () => {
  const s = strip(
    [
      r('other', at(25, 9), at(25, 10), { node: 'M' }),
      r('cancelled', at(25, 9), at(25, 10), { state: 'cancelled' }),
      r('forged', at(25, 9), at(25, 10), { problem: 'GPU X is not its machine\'s' }),
      r('later', at(31, 9), at(31, 10)),
      r('past', at(20, 9), at(20, 10)),
    ],
    'N', now, 7)
  assert.deepEqual(s.blocks.map((b) => b.id), [])
})

test('strip puts overlapping ones on separate rows, and marks refused ones', () => {
  const s = strip(
    [r('a', at(25, 9), at(25, 12)), r('b', at(25, 11), at(25, 13), { state: 'refused', reason: 'overlapping' }), r('c', at(26, 9), at(26, 14))],
    'N', now, 7)
  assert.deepEqual(s.blocks.map((b) => [b.id, b.row, b.refused]), [['a', 0, false], ['b', 1, true], ['c', 0, false]])
  assert.equal(s.rows, 2)
})

test('strip gives a short reservation room for its label, on its own row', () => {
  // a and c are apart in time, but a's 3 hours are 2% of the week: its
  // label would run under c's block.
  const s = strip([r('a', at(25, 9), at(25, 12)), r('c', at(25, 12), at(25, 14))], 'N', now, 7)
  const [a, c] = s.blocks
  assert.ok(a.width < 3 && a.space >= labelPct, `a spans ${a.width}% and takes ${a.space}%`)
  assert.deepEqual([a.row, c.row], [0, 1])
  const end = strip([r('z', at(30, 20), at(30, 23))], 'N', now, 7).blocks[0]
  assert.ok(end.left + end.space <= 100.0001, `a block at the end stays on the strip: ${end.left}% + ${end.space}%`)
})

test('strip clips a reservation that started before today', () => {
  const s = strip([r('a', at(23, 20), at(24, 2))], 'N', now, 7)
  assert.equal(s.blocks[0].left, 0)
})

test('startOfDay is local midnight', () => {
  const d = new Date(startOfDay(now))
  assert.deepEqual([d.getDate(), d.getHours(), d.getMinutes()], [24, 0, 0])
})
