import assert from 'node:assert/strict'
import { test } from 'node:test'
import { gpuMemMeter } from './gpumem.ts'

const GiB = 2 ** 30

test('gpuMemMeter labels a unified GPU and keeps the rest as they were', () => {
  const cases = [
    { name: 'a discrete GPU', gpu: { mem_used_bytes: 20 * GiB, mem_total_bytes: 80 * GiB, mem_reserved_bytes: 0 }, label: 'Mem', title: '25% of GPU memory in use' },
    { name: 'with reserved memory', gpu: { mem_used_bytes: 0, mem_total_bytes: 80 * GiB, mem_reserved_bytes: 615 * 2 ** 20 }, label: 'Mem', title: 'reserved by the driver' },
    {
      name: 'a GB10: the system memory, unified',
      gpu: { mem_used_bytes: 40 * GiB, mem_total_bytes: 119 * GiB, mem_reserved_bytes: 0, mem_unified: true },
      label: 'Unified',
      title: 'unified memory',
    },
  ]
  for (const c of cases) {
    const m = gpuMemMeter(c.gpu)
    assert.equal(m.label, c.label, c.name)
    assert.ok(m.title.includes(c.title), `${c.name}: ${m.title}`)
  }
})
