import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Answers, type KeyValueStore } from './answers.ts'

class FakeStore implements KeyValueStore {
  data = new Map<string, string>()
  refuse = false
  getItem(k: string) {
    return this.data.get(k) ?? null
  }
  setItem(k: string, v: string) {
    if (this.refuse) throw new Error('QuotaExceededError')
    this.data.set(k, v)
  }
}

const cfg = { memory: 2, stored: 2, storedChars: 200, key: 'k' }
const why = (e: unknown) => (e instanceof Error ? e.message : String(e))
const fail = () => Promise.reject(new Error('Cannot reach the labpool daemon'))

test('a fresh answer is kept; when the daemon fails the kept one comes back stale, with why', async () => {
  const a = new Answers(new FakeStore(), cfg)
  assert.equal(a.get('/x'), null)
  const fresh = await a.fetch('/x', async () => ({ n: 1 }), why, () => 1000)
  assert.deepEqual(fresh, { value: { n: 1 }, stale: false, error: '', fetchedAt: 1000 })
  const old = await a.fetch('/x', fail, why, () => 2000)
  assert.deepEqual(old, { value: { n: 1 }, stale: true, error: 'Cannot reach the labpool daemon', fetchedAt: 1000 })
  await assert.rejects(a.fetch('/y', fail, why), /Cannot reach/)
})

test('a new page finds the small answers in the store, never the big ones', async () => {
  const store = new FakeStore()
  const a = new Answers(store, cfg)
  a.put('/small', [1, 2, 3], 5)
  a.put('/big', 'x'.repeat(500), 6)
  const b = new Answers(store, cfg)
  assert.deepEqual(b.get('/small'), { value: [1, 2, 3], stale: true, error: '', fetchedAt: 5 })
  assert.equal(b.get('/big'), null)
  // Only the newest `stored` answers stay in the store.
  a.put('/a', 1, 7)
  a.put('/b', 2, 8)
  const c = new Answers(store, cfg)
  assert.equal(c.get('/small'), null)
  assert.equal(c.get('/b')?.value, 2)
})

test('memory keeps the newest used answers', () => {
  const a = new Answers(null, cfg)
  a.put('/1', 1, 0)
  a.put('/2', 2, 0)
  a.put('/1', 11, 0) // used again: now the newest
  a.put('/3', 3, 0)
  assert.equal(a.get('/2'), null)
  assert.equal(a.get('/1')?.value, 11)
  assert.equal(a.get('/3')?.value, 3)
})

test('a store that refuses or holds garbage is only a cache', () => {
  const store = new FakeStore()
  store.data.set('k', '{not json')
  const a = new Answers(store, cfg)
  assert.equal(a.get('/x'), null)
  store.refuse = true
  assert.equal(a.put('/x', 1, 0).value, 1)
  assert.equal(a.get('/x')?.value, 1)
  store.data.set('k', '[["/y"], 3, null]')
  assert.equal(new Answers(store, cfg).get('/y'), null)
})
