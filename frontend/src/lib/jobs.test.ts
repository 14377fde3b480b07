import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Job } from '../api/jobs.ts'
import {
  buildSpec,
  stopNotice,
  commandText,
  defaultGPUs,
  emptyForm,
  exitText,
  formatRuntime,
  gpuHours,
  jobGPUSeconds,
  gpuWeightText,
  mergeActive,
  onCluster,
  vanished,
  parseEnv,
  parseMounts,
  parsePorts,
  parseSize,
  runSeconds,
  sameImage,
  splitCommand,
  stateText,
  visibleJobs,
  type FormField,
  type LaunchForm,
} from './jobs.ts'

const GiB = 2 ** 30

test('parseSize', () => {
  const cases: [string, number | null][] = [
    ['4096', 4096],
    ['0', 0],
    ['512m', 512 * 2 ** 20],
    ['32g', 32 * GiB],
    ['32G', 32 * GiB],
    ['20GiB', 20 * GiB],
    ['20 gib', 20 * GiB],
    ['  8g  ', 8 * GiB],
    ['2GB', 2e9],
    ['1.5g', 1.5 * GiB],
    ['.5g', 0.5 * GiB],
    ['5.', 5],
    ['1k', 1024],
    ['1kb', 1000],
    ['1TiB', 2 ** 40],
    ['1tb', 1e12],
    ['12b', 12],
    ['lots', null],
    ['12x', null],
    ['12 gigs', null],
    ['', null],
    ['   ', null],
    ['-1g', null],
    ['1e3', null],
    ['1.2.3g', null],
    ['.', null],
    ['g', null],
    ['32g extra', null],
    ['99999999999999999999t', null],
  ]
  for (const [in_, want] of cases) assert.equal(parseSize(in_), want, `parseSize(${JSON.stringify(in_)})`)
})

test('parseMounts', () => {
  assert.deepEqual(parseMounts('data:/data\n  out:/out:rw \n\nref:/ref:ro'), [
    { folder: 'data', target: '/data', rw: false },
    { folder: 'out', target: '/out', rw: true },
    { folder: 'ref', target: '/ref', rw: false },
  ])
  assert.deepEqual(parseMounts(''), [])
  assert.throws(() => parseMounts('data'), /FOLDER/)
  assert.throws(() => parseMounts('data:rel'), /FOLDER/)
  assert.throws(() => parseMounts(':/x'), /FOLDER/)
  assert.throws(() => parseMounts('d:/x:rwx'), /"d:\/x:rwx"/)
  assert.throws(() => parseMounts('d:/x:rw:extra'), /FOLDER/)
})

test('parsePorts', () => {
  assert.deepEqual(parsePorts('8888, 6006 8888'), [8888, 6006])
  assert.deepEqual(parsePorts('  '), [])
  assert.throws(() => parsePorts('0'), /port/)
  assert.throws(() => parsePorts('70000'), /port/)
  assert.throws(() => parsePorts('88.5'), /port/)
  assert.throws(() => parsePorts('http'), /port/)
})

test('parseEnv', () => {
  assert.deepEqual(parseEnv('A=1\n B_2=x=y \n\nEMPTY='), ['A=1', 'B_2=x=y', 'EMPTY='])
  assert.throws(() => parseEnv('NOVALUE'), /NAME=value/)
  assert.throws(() => parseEnv('1A=x'), /NAME=value/)
})

test('splitCommand', () => {
  assert.deepEqual(splitCommand(`sh -c 'echo hi; sleep 1'`), ['sh', '-c', 'echo hi; sleep 1'])
  assert.deepEqual(splitCommand('python  train.py --lr "0.1"'), ['python', 'train.py', '--lr', '0.1'])
  assert.deepEqual(splitCommand(`echo ''`), ['echo', ''])
  assert.deepEqual(splitCommand(''), [])
  assert.throws(() => splitCommand(`echo 'x`), /quote/)
})

test('buildSpec', () => {
  const f = {
    ...emptyForm(),
    image: ' pytorch:24 ',
    gpus: 2,
    minGPUMem: '20GiB',
    cpus: '8',
    memory: '32g',
    shm: '8g',
    folders: 'data:/data',
    ports: '8888',
    env: 'A=1',
    cmd: `sh -c 'echo hi'`,
    name: ' train ',
    restart: 'on-failure' as const,
    queue: true,
  }
  const { spec, errors } = buildSpec(f)
  assert.deepEqual(errors, {})
  assert.deepEqual(spec, {
    image: 'pytorch:24',
    cmd: ['sh', '-c', 'echo hi'],
    name: 'train',
    gpus: 2,
    min_gpu_mem_bytes: 20 * GiB,
    memory_bytes: 32 * GiB,
    shm_bytes: 8 * GiB,
    cpus: 8,
    mounts: [{ folder: 'data', target: '/data', rw: false }],
    ports: [8888],
    env: ['A=1'],
    restart: 'on-failure',
    queue: true,
  })

  const picked = buildSpec({ ...emptyForm(), image: 'x', gpuMode: 'pick', gpus: 3, picked: [3, 0] })
  assert.deepEqual(picked.spec, { image: 'x', gpu_ids: [0, 3] })

  const bad = buildSpec({ ...emptyForm(), image: 'x', memory: '32 gigs', cpus: '-1', ports: 'abc', cmd: "echo 'x", gpus: 1.5 })
  assert.deepEqual(Object.keys(bad.errors).sort(), ['cmd', 'cpus', 'gpus', 'memory', 'ports'])
  assert.deepEqual(bad.spec, { image: 'x' }, 'fields in error are left out')
})

test('buildSpec share and MIG profile', () => {
  const share = buildSpec({ ...emptyForm(1), image: 'x', gpuShare: '0.25', gpuMem: '20GiB' })
  assert.deepEqual(share.errors, {})
  assert.deepEqual(share.spec, { image: 'x', gpu_share: 0.25, gpu_mem_bytes: 20 * GiB }, 'a share is of one GPU: the count goes')

  const mig = buildSpec({ ...emptyForm(2), image: 'x', mig: '3g.40gb' })
  assert.deepEqual(mig.spec, { image: 'x', gpus: 2, mig_profile: '3g.40gb' })

  const cases: [Partial<LaunchForm>, FormField][] = [
    [{ gpuShare: '1.5' }, 'gpuShare'],
    [{ gpuShare: '1' }, 'gpuShare'],
    [{ gpuShare: '0' }, 'gpuShare'],
    [{ gpuShare: 'half' }, 'gpuShare'],
    [{ gpuMem: '8g' }, 'gpuMem'],
    [{ mig: '3g' }, 'mig'],
    [{ gpuShare: '0.5', mig: '3g.40gb' }, 'mig'],
    [{ gpuShare: '0.5', gpuMode: 'pick', picked: [1] }, 'gpuShare'],
  ]
  for (const [form, field] of cases) {
    const b = buildSpec({ ...emptyForm(1), image: 'x', ...form })
    assert.ok(b.errors[field], `${JSON.stringify(form)}: want an error on ${field}`)
    const key = { gpuShare: 'gpu_share', gpuMem: 'gpu_mem_bytes', mig: 'mig_profile' }[field as string] as keyof typeof b.spec
    assert.equal(b.spec[key], undefined, `${JSON.stringify(form)}: the field in error is left out`)
  }

  const onCluster = buildSpec({ ...emptyForm(1), image: 'x', gpuShare: '0.5' }, true)
  assert.equal(onCluster.spec.gpu_share, undefined, 'a cluster places whole GPUs')
})

test('sameImage', () => {
  assert.ok(sameImage('busybox', 'busybox:latest'))
  assert.ok(sameImage('docker.io/library/busybox:1', 'busybox:1'))
  assert.ok(sameImage('localhost:5000/x/y', 'localhost:5000/x/y:latest'))
  assert.ok(!sameImage('busybox:1', 'busybox:2'))
  assert.ok(!sameImage('a/busybox', 'busybox'))
  assert.ok(sameImage('busybox@sha256:abc', 'busybox@sha256:abc'))
})

test('runSeconds', () => {
  const now = Date.parse('2026-01-01T01:00:00Z')
  assert.equal(runSeconds({ started: '2026-01-01T00:00:00Z', finished: null }, now), 3600)
  assert.equal(runSeconds({ started: '2026-01-01T00:00:00Z', finished: '2026-01-01T00:30:00Z' }, now), 1800)
  assert.equal(runSeconds({ started: null }, now), 0)
  assert.equal(runSeconds({ started: '0001-01-01T00:00:00Z' }, now), 0)
  assert.equal(runSeconds({ started: '2026-01-01T02:00:00Z' }, now), 0, 'a clock ahead never gives a negative runtime')
  assert.equal(runSeconds({ started: 'garbage' }, now), 0)
})

test('formatRuntime', () => {
  const cases: [number, string][] = [
    [0, '0s'],
    [-5, '0s'],
    [42.9, '42s'],
    [60, '1m 00s'],
    [303, '5m 03s'],
    [3599, '59m 59s'],
    [3600, '1h 00m'],
    [7500, '2h 05m'],
    [86400 * 3 + 3600 * 4 + 59, '3d 4h'],
  ]
  for (const [s, want] of cases) assert.equal(formatRuntime(s), want, `formatRuntime(${s})`)
})

test('gpuHours and jobGPUSeconds', () => {
  assert.equal(gpuHours(0), '0.00')
  assert.equal(gpuHours(5400), '1.50')
  assert.equal(gpuHours(-3), '0.00')
  assert.equal(gpuHours(NaN), '0.00')
  assert.equal(gpuHours(3600 * 1234.4), '1,234')

  const now = Date.parse('2026-01-01T01:00:00Z')
  const base = { started: '2026-01-01T00:00:00Z', finished: null, gpu_seconds: 100, gpu_indexes: [0, 1] }
  assert.equal(jobGPUSeconds({ ...base, state: 'running' }, now), 7200, 'running: wall time × GPUs when ahead')
  assert.equal(jobGPUSeconds({ ...base, state: 'running', gpu_seconds: 9000 }, now), 9000)
  assert.equal(jobGPUSeconds({ ...base, state: 'exited' }, now), 100, 'ended: the record')
  assert.equal(jobGPUSeconds({ ...base, state: 'running', gpu_indexes: null }, now), 100)
  assert.equal(jobGPUSeconds({ ...base, state: 'running', gpu_indexes: null, gpu_weight: 2 }, now), 7200, 'a cluster job: its cluster GPUs')
  assert.equal(jobGPUSeconds({ ...base, state: 'running', gpu_indexes: [0], gpu_weight: 0.25 }, now), 900, 'a share: its fraction')
  assert.equal(jobGPUSeconds({ ...base, state: 'running', gpu_weight: -4 }, now), 100, 'a negative weight counts nothing more')
  assert.equal(gpuWeightText({ gpu_weight: 2 }), '2 GPUs × time held')
  assert.equal(gpuWeightText({ gpu_weight: 1 }), '1 GPU × time held')
  assert.equal(gpuWeightText({ gpu_weight: 3 / 7 }), '0.429 of a GPU × time held')
  assert.equal(gpuWeightText({}), '')
})

function job(id: string, over: Partial<Job>): Job {
  return {
    id, name: id, node: 'N1', node_name: 'lab1', owner: 'O', owner_name: 'me', owner_verified: true, image: 'img', spec: { image: 'img' },
    state: 'running', gpus: null, gpu_indexes: null, created: '2026-01-01T00:00:00Z', gpu_seconds: 0, gpu_weight: 0, stale: false,
    ...over,
  }
}

test('visibleJobs', () => {
  const now = Date.parse('2026-01-01T01:00:00Z')
  const list = [
    job('old-exit', { state: 'exited', created: '2026-01-01T00:00:01Z', finished: '2026-01-01T00:10:00Z' }),
    job('recent-exit', { state: 'exited', created: '2026-01-01T00:00:02Z', finished: '2026-01-01T00:55:00Z' }),
    job('run-old', { created: '2026-01-01T00:00:00Z' }),
    job('queued-new', { state: 'queued', created: '2026-01-01T00:30:00Z' }),
  ]
  assert.deepEqual(visibleJobs(list, false, now).map((j) => j.id), ['queued-new', 'run-old', 'recent-exit'])
  assert.deepEqual(visibleJobs(list, true, now).map((j) => j.id), ['queued-new', 'run-old', 'recent-exit', 'old-exit'])
})

test('vanished and mergeActive', () => {
  const now = Date.parse('2026-01-01T01:00:00Z')
  const prev = [
    job('still', {}),
    job('stopped', {}),
    job('removed', {}),
    job('recent', { state: 'exited', finished: '2026-01-01T00:58:00Z' }),
    job('old', { state: 'failed', finished: '2026-01-01T00:00:00Z' }),
  ]
  const active = [job('still', {}), job('new', { state: 'queued' })]
  assert.deepEqual(vanished(prev, active).map((j) => j.id), ['stopped', 'removed'])
  const looked = [job('stopped', { state: 'exited', finished: '2026-01-01T00:59:59Z', exit_code: 143 }), null]
  const got = mergeActive(prev, active, looked, now)
  assert.deepEqual(got.map((j) => j.id), ['still', 'new', 'stopped', 'recent'])
  assert.equal(got[2].exit_code, 143)
  const again = mergeActive(got, active, [job('recent', { state: 'exited', finished: '2026-01-01T00:58:00Z', exit_code: 7 })], now)
  assert.deepEqual(again.map((j) => j.id), ['still', 'new', 'recent', 'stopped'])
  assert.equal(again[2].exit_code, 7, 'a looked-up record replaces the kept one')
})

test('commandText', () => {
  const spec = { image: 'img' }
  assert.equal(commandText({ cmd_withheld: true, spec }), 'command line withheld')
  assert.equal(commandText({ spec }), "the image's default command")
  assert.equal(commandText({ spec: { ...spec, cmd: ['sh', '-c', 'echo hi'] } }), 'sh -c "echo hi"')
})

test('defaultGPUs: 1 where the pool or the chosen machine has a GPU, else 0', () => {
  const laptop = { id: 'L', online: true, containers: true, gpus: [] }
  const dgx = { id: 'D', online: true, containers: true, gpus: [{}, {}] as never[] }
  const off = { id: 'O', online: false, containers: true, gpus: [{}] as never[] }
  assert.equal(defaultGPUs([laptop, dgx]), 1)
  assert.equal(defaultGPUs([laptop]), 0)
  assert.equal(defaultGPUs([laptop, off]), 0, 'an offline GPU machine runs nothing now')
  assert.equal(defaultGPUs([laptop, dgx], 'L'), 0, 'a GPU-less machine chosen')
  assert.equal(defaultGPUs([laptop, dgx], 'D'), 1)
  assert.equal(emptyForm(defaultGPUs([dgx])).gpus, 1)
})

test('buildSpec: a container has a time limit too', () => {
  assert.deepEqual(buildSpec({ ...emptyForm(1), image: 'x', time: '2h', queue: true }).spec, { image: 'x', gpus: 1, queue: true, time_limit_s: 7200 })
  assert.deepEqual(buildSpec({ ...emptyForm(), image: 'x', time: '1-00:00:00' }).spec, { image: 'x', time_limit_s: 86400 })
  assert.match(buildSpec({ ...emptyForm(), image: 'x', time: 'soon' }).errors.time ?? '', /write 2h, 90m/)
  assert.equal(buildSpec({ ...emptyForm(), image: 'x' }).spec.time_limit_s, undefined)
})

test('buildSpec on a Slurm cluster: partition, nodes with GPUs per node, time limit', () => {
  const f = { ...emptyForm(2), cmd: 'srun hostname', partition: 'gpu', nodes: 2, time: '1-12:00:00', queue: true }
  const { spec, errors } = buildSpec(f, true)
  assert.deepEqual(errors, {})
  assert.deepEqual(spec, { image: '', cmd: ['srun', 'hostname'], partition: 'gpu', nodes: 2, gpus_per_node: 2, time_limit_s: 129600 })
  const one = buildSpec({ ...emptyForm(1), cmd: 'x', time: '90m' }, true).spec
  assert.deepEqual(one, { image: '', cmd: ['x'], gpus: 1, time_limit_s: 5400 })
  const bad = buildSpec({ ...emptyForm(1), nodes: 0, time: 'soon' }, true).errors
  assert.ok(bad.nodes && bad.time, JSON.stringify(bad))
  assert.equal(buildSpec({ ...emptyForm(1), image: 'x', partition: 'gpu', nodes: 3, time: '2h' }).spec.partition, undefined, 'a pool machine gets no cluster fields')
})

test('buildSpec gives a container its time limit too', () => {
  const { spec, errors } = buildSpec({ ...emptyForm(1), image: 'x', gpuShare: '0.5', time: '30m' })
  assert.deepEqual(errors, {})
  assert.equal(spec.time_limit_s, 1800)
  assert.equal(spec.gpu_share, 0.5)
  assert.ok(buildSpec({ ...emptyForm(1), image: 'x', time: 'soon' }).errors.time, 'a time that does not parse is named')
})

test('defaultGPUs counts a cluster GPUs when it is chosen', () => {
  const hpc = { id: 'H', online: true, containers: false, gpus: [], cluster: { gpus: [{ type: 'a100', total: 8, alloc: 8 }] } as never }
  assert.equal(defaultGPUs([hpc], 'H'), 1)
})

test('stateText says how a job ended and why it waits', () => {
  assert.equal(stateText({ state: 'queued', error: 'Resources' }), 'queued (Resources)')
  assert.equal(stateText({ state: 'running' }), 'running')
  assert.equal(stateText({ state: 'failed', exit_code: 3 }), 'exited 3')
  assert.equal(stateText({ state: 'exited', outcome: 'cancelled', exit_code: 0 }), 'cancelled')
  assert.equal(stateText({ state: 'failed', outcome: 'timed_out' }), 'timed out')
  // --restart on-failure: the engine's restarts show.
  assert.equal(stateText({ state: 'running', restarts: 2 }), 'running, restarted 2×')
  assert.equal(stateText({ state: 'failed', exit_code: 1, restarts: 5 }), 'exited 1, restarted 5×')
})

test('exitText gives a cancelled or timed-out job no exit code of 0', () => {
  assert.equal(exitText({ exit_code: undefined }), '—')
  assert.equal(exitText({ exit_code: 0 }), '0')
  assert.equal(exitText({ exit_code: 3 }), '3')
  assert.equal(exitText({ exit_code: 0, outcome: 'cancelled' }), '—') // Slurm's ExitCode 0:15
  assert.equal(exitText({ exit_code: 0, outcome: 'timed_out' }), '—')
  assert.equal(exitText({ exit_code: 143, outcome: 'cancelled' }), '143') // docker stop
  assert.equal(exitText({ exit_code: 137, outcome: 'oom' }), '137')
})

test('onCluster tells a Slurm job from a container', () => {
  assert.equal(onCluster({ executor: 'slurm' }), true)
  assert.equal(onCluster({ executor: 'docker' }), false)
  assert.equal(onCluster({ executor: undefined }), false)
})

test('stopNotice says when and why a job on reserved GPUs stops', () => {
  const now = Date.parse('2026-03-24T13:46:00Z')
  const j = { state: 'running' as const, stop_at: '2026-03-24T14:00:00Z', stop_why: 'stopped: its GPUs are reserved for bob from Tue 24 Mar 14:00 UTC (rsv-1)' }
  assert.equal(stopNotice(j, now), 'stopped in 14 min: its GPUs are reserved for bob from Tue 24 Mar 14:00 UTC (rsv-1)')
  assert.equal(stopNotice({ ...j, stop_why: 'requeued: its GPUs are reserved for bob from Tue 24 Mar 14:00 UTC (rsv-1)' }, now),
    'requeued in 14 min: its GPUs are reserved for bob from Tue 24 Mar 14:00 UTC (rsv-1)')
  assert.equal(stopNotice({ ...j, state: 'exited' as const }, now), '')
  assert.equal(stopNotice({ ...j, stop_at: null }, now), '')
})
