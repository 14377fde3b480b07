import assert from 'node:assert/strict'
import { test } from 'node:test'
import { gpuHours, parseMounts, parseSize, runSeconds, splitCommand } from './jobs.ts'

test('parseSize', () => {
  assert.equal(parseSize('4096'), 4096)
  assert.equal(parseSize('512m'), 512 * 2 ** 20)
  assert.equal(parseSize('32g'), 32 * 2 ** 30)
  assert.equal(parseSize('20GiB'), 20 * 2 ** 30)
  assert.equal(parseSize('2GB'), 2e9)
  assert.equal(parseSize('1.5g'), 1.5 * 2 ** 30)
  assert.equal(parseSize('lots'), null)
  assert.equal(parseSize('12x'), null)
  assert.equal(parseSize(''), null)
})

test('parseMounts', () => {
  assert.deepEqual(parseMounts('data:/data\nout:/out:rw\n'), [
    { folder: 'data', target: '/data', rw: false },
    { folder: 'out', target: '/out', rw: true },
  ])
  assert.throws(() => parseMounts('data'), /FOLDER/)
  assert.throws(() => parseMounts('data:rel'), /FOLDER/)
})

test('splitCommand', () => {
  assert.deepEqual(splitCommand(`sh -c 'echo hi; sleep 1'`), ['sh', '-c', 'echo hi; sleep 1'])
  assert.deepEqual(splitCommand('python  train.py --lr "0.1"'), ['python', 'train.py', '--lr', '0.1'])
  assert.deepEqual(splitCommand(`echo ''`), ['echo', ''])
  assert.throws(() => splitCommand(`echo 'x`), /quote/)
})

test('runSeconds and gpuHours', () => {
  const now = Date.parse('2026-01-01T01:00:00Z')
  assert.equal(runSeconds({ started: '2026-01-01T00:00:00Z', finished: null }, now), 3600)
  assert.equal(runSeconds({ started: '2026-01-01T00:00:00Z', finished: '2026-01-01T00:30:00Z' }, now), 1800)
  assert.equal(runSeconds({ started: null }, now), 0)
  assert.equal(gpuHours(5400), '1.50')
})
