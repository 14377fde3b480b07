import assert from 'node:assert/strict'
import { test } from 'node:test'
import { membersChange } from './folders.ts'

test('membersChange', () => {
  // A list edited: what was ticked is added, what was unticked removed, so
  // that a change made meanwhile on another machine is kept.
  assert.deepEqual(membersChange(['A', 'B'], ['B', 'C']), { add: ['C'], remove: ['A'] })
  assert.deepEqual(membersChange(['A'], ['A']), { add: [], remove: [] })
  // A folder for every member gets a list; none ticked is every member.
  assert.deepEqual(membersChange([], ['A']), { members: ['A'] })
  assert.deepEqual(membersChange(['A', 'B'], []), { members: [] })
})
