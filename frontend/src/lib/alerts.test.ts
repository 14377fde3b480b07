import assert from 'node:assert/strict'
import { test } from 'node:test'
import { defaultRuleNode, describeRule, durationText, gpuRulesNote, isActive, isGPURule, parseDuration, splitAlerts } from './alerts.ts'

const alert = (id: string, fired: string, cleared: string | null, severity = 'warning', muted = false) => ({
  id,
  fired_at: fired,
  cleared_at: cleared,
  severity,
  muted,
})

test('splitAlerts', () => {
  const list = [
    alert('old', '2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z'),
    alert('warn', '2026-01-02T00:00:00Z', null),
    alert('crit', '2026-01-01T12:00:00Z', null, 'critical'),
    alert('muted', '2026-01-03T00:00:00Z', null, 'critical', true),
    alert('newer', '2026-01-01T00:00:00Z', '2026-01-01T05:00:00Z'),
    alert('zero', '2026-01-01T00:00:00Z', '0001-01-01T00:00:00Z'),
  ]
  const { active, past } = splitAlerts(list)
  assert.deepEqual(active.map((a) => a.id), ['crit', 'warn', 'zero', 'muted'])
  assert.deepEqual(past.map((a) => a.id), ['newer', 'old'])
  assert.deepEqual(splitAlerts(null), { active: [], past: [] })
  assert.equal(isActive({ cleared_at: undefined }), true)
})

test('describeRule', () => {
  assert.equal(describeRule({ metric: 'temp_c', op: '>', threshold: 85, for_seconds: 120 }), 'temp_c over 85 for 2 min')
  assert.equal(describeRule({ metric: 'util_percent', op: '<', threshold: 5, for_seconds: 0 }), 'util_percent under 5')
})

test('durations', () => {
  assert.equal(durationText(90), '90 s')
  assert.equal(durationText(120), '2 min')
  assert.equal(durationText(5400), '1 h 30 min')
  assert.equal(durationText(7200), '2 h')
  assert.equal(parseDuration('90'), 90)
  assert.equal(parseDuration('2m'), 120)
  assert.equal(parseDuration(' 2 min '), 120)
  assert.equal(parseDuration('1.5h'), 5400)
  assert.equal(parseDuration('soon'), null)
})

test('defaultRuleNode opens the rule editor on a machine with GPUs, not on a GPU-less laptop', () => {
  const laptop = { id: 'lap', gpus: [] }
  const dgx = { id: 'dgx', gpus: [{}] }
  const hpc = { id: 'hpc', gpus: [], cluster: {} }
  assert.equal(defaultRuleNode([laptop, hpc, dgx], 'lap'), 'dgx')
  assert.equal(defaultRuleNode([dgx, { id: 'ws', gpus: [{}] }], 'ws'), 'ws')
  assert.equal(defaultRuleNode([laptop], 'lap'), 'lap') // nothing else: its own machine rules
  assert.equal(defaultRuleNode([], 'lap'), '')
})

test('gpuRulesNote: a machine without GPUs says its GPU rules watch nothing there', () => {
  assert.equal(
    gpuRulesNote({ name: 'alice-laptop', gpus: [], gpu_error: 'no NVIDIA GPU found' }),
    'alice-laptop has no GPU (no NVIDIA GPU found): its GPU rules, dimmed, have nothing to watch there. A change to them is still set on every machine of the pool.',
  )
  assert.match(gpuRulesNote({ name: 'lap', gpus: null }), /^lap has no GPU: /)
  assert.equal(gpuRulesNote({ name: 'dgx', gpus: [{}] }), '')
  assert.equal(gpuRulesNote({ name: 'hpc', gpus: [], cluster: {} }), '') // a cluster's GPUs are its nodes'
  assert.equal(gpuRulesNote(undefined), '')
  // The built-in rules (node/alerts DefaultRules): which ones watch GPUs.
  const rules: [string, boolean][] = [
    ['temp_c', true], ['granted_util_percent', true], ['health', true], ['throttle', true], ['util_percent', true], ['mem_used_percent', true], ['power_w', true],
    ['folder_disk_percent', false], ['offline', false], ['cpu_percent', false], ['host_mem_percent', false],
  ]
  for (const [metric, gpu] of rules) assert.equal(isGPURule({ metric }), gpu, metric)
})
