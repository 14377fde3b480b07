import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { LendStatus } from '../api/types.gen.ts'
import { jobLendNote, lendManaged, lendText } from './lend.ts'

const now = new Date(2026, 2, 4, 14, 22).getTime()
const at = (min: number) => new Date(now + min * 60000).toISOString()

test('lendText says what the machine published', () => {
  const cases: [Partial<LendStatus>, string][] = [
    [{ mode: 'idle', phase: 'lent', owner_seen: at(-23) }, 'lent (owner away 23 min)'],
    [{ mode: 'idle', phase: 'lent', owner_seen: at(-125) }, 'lent (owner away 2 h 5 min)'],
    [{ mode: 'always', phase: 'lent', hours: 'sat-sun' }, 'lent (sat-sun)'],
    [{ mode: 'idle', phase: 'warned', yield: 'pause', why: "owner present: I'm using it", deadline: at(10) }, "owner present: guests pause at 14:32 (I'm using it)"],
    [{ mode: 'idle', phase: 'yielded', yield: 'stop', why: 'owner present: your GPU processes', since: at(-60) }, 'owner present: guests stopped since 13:22 (your GPU processes)'],
    [{ mode: 'always', phase: 'warned', yield: 'pause', why: 'outside the lend hours (mon-fri 19:00-08:00)', deadline: at(10) }, 'outside the lend hours (mon-fri 19:00-08:00): guests pause at 14:32'],
    [{ mode: 'never', phase: 'kept', why: 'lend never' }, "owner's: lend never"],
  ]
  for (const [s, want] of cases) assert.equal(lendText({ since: at(0), ...s } as LendStatus, now), want)
})

test('lendManaged hides a machine lent as before lending', () => {
  assert.equal(lendManaged(null), false)
  assert.equal(lendManaged({ mode: 'always', phase: 'lent', since: at(0) }), false)
  assert.equal(lendManaged({ mode: 'always', phase: 'lent', since: at(0), hours: 'sat-sun' }), true)
  assert.equal(lendManaged({ mode: 'idle', phase: 'kept', since: at(0) }), true)
})

test('jobLendNote says why a guest is paused, or when it will be', () => {
  const why = "owner present: I'm using it"
  assert.equal(jobLendNote({ state: 'running', lend: { at: at(-1), paused: true, yield: 'pause', why } }), `paused since 14:21: the machine's owner took it back (${why})`)
  assert.equal(jobLendNote({ state: 'running', lend: { at: at(10), yield: 'stop', why } }), `stops at 14:32: the machine's owner takes it back (${why})`)
  assert.equal(jobLendNote({ state: 'running', lend: null }), '')
  assert.equal(jobLendNote({ state: 'exited', lend: { at: at(-1), paused: true, yield: 'pause', why } }), '')
})
