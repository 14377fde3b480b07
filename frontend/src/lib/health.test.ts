import assert from 'node:assert/strict'
import { test } from 'node:test'
import { gpuHealth, gpuProcesses, healthBadge, processCount } from './health.ts'

test('gpuHealth reads the sample fields, and nothing from an older daemon', () => {
  assert.deepEqual(gpuHealth({ health: 'quarantined', health_reason: 'XID 79', throttle: ['sw_power_cap', 3], job: 'j1' }), {
    state: 'quarantined',
    reason: 'XID 79',
    throttle: ['sw_power_cap'],
    job: 'j1',
    jobName: 'j1',
    jobOwner: '',
    holder: '',
  })
  assert.deepEqual(gpuHealth({ processes: 2 }), { state: '', reason: '', throttle: [], job: '', jobName: '', jobOwner: '', holder: '' })
})

test('gpuHealth names the job and its owner, never the long IDs', () => {
  const h = gpuHealth({ health: 'ok', job: '7e82623a8db42109aa', job_name: 'train-bert', job_owner: 'ALIC-AAAA-AAAA', job_owner_name: 'alice' })
  assert.equal(h.jobName, 'train-bert')
  assert.equal(h.jobOwner, 'alice')
  // Until the job's record arrives: its short ID.
  assert.equal(gpuHealth({ job: '7e82623a8db42109aa' }).jobName, '7e82623a8db4')
  const procs = gpuProcesses({ job: 'j1', job_name: 'train-bert', process_list: [{ pid: 1, mem_bytes: 1, job: 'j1', owner: 'A' }] })
  assert.equal(procs[0].jobName, 'train-bert')
})

test('gpuProcesses', () => {
  const g = {
    processes: [
      { pid: 7, mem_bytes: 100, job: '', owner: '' },
      { pid: 3, mem_bytes: 900, job: 'j1', owner: 'alice' },
      null,
    ],
  }
  assert.deepEqual(gpuProcesses(g), [
    { pid: 3, memBytes: 900, job: 'j1', jobName: 'j1', owner: 'alice', holder: '', outside: false },
    { pid: 7, memBytes: 100, job: '', jobName: '', owner: '', holder: '', outside: true },
  ])
  assert.deepEqual(gpuProcesses({ processes: 4 }), [])
  assert.equal(processCount({ processes: 4 }), 4)
  assert.equal(processCount(g), 3)
  // app.GPU: processes is the count, process_list the list.
  assert.deepEqual(gpuProcesses({ processes: 1, process_list: [{ pid: 9, mem_bytes: 5, job: '', owner: '' }] }), [
    { pid: 9, memBytes: 5, job: '', jobName: '', owner: '', holder: '', outside: true },
  ])
  assert.equal(processCount({ processes: 1, process_list: [{ pid: 9 }] }), 1)
  assert.equal(healthBadge('lost')?.cls, 'failed')
  assert.equal(healthBadge(''), null)
})

test('a Slurm job on a compute node is named, never outside labpool', () => {
  const g = {
    job: 'j1',
    job_name: 'train',
    holder: 'slurm job 123',
    process_list: [
      { pid: 5, mem_bytes: 10, job: 'j1', owner: 'A', holder: 'slurm job 123' },
      { pid: 6, mem_bytes: 5, job: '', owner: '', holder: 'slurm job 77' },
    ],
  }
  assert.equal(gpuHealth(g).holder, 'slurm job 123')
  assert.deepEqual(
    gpuProcesses(g).map((p) => [p.pid, p.jobName, p.holder, p.outside]),
    [
      [5, 'train', 'slurm job 123', false],
      [6, '', 'slurm job 77', false],
    ],
  )
})
