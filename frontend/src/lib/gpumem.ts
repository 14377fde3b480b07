import type { GPU } from '../api/types.ts'
import { formatBytes, formatPercent, percentOf } from './format.ts'

// gpuMemMeter is what a GPU's memory meter says: "Mem", or "Unified" where
// the GPU shares the system's memory (a GB10, DGX Spark) and the figures
// are the machine's, the same memory its host meter shows.
export function gpuMemMeter(gpu: Pick<GPU, 'mem_used_bytes' | 'mem_total_bytes' | 'mem_reserved_bytes' | 'mem_unified'>): {
  label: string
  title: string
} {
  const pct = formatPercent(percentOf(gpu.mem_used_bytes, gpu.mem_total_bytes))
  if (gpu.mem_unified) {
    return { label: 'Unified', title: `${pct} of the machine's memory in use: this GPU shares it with the host (unified memory)` }
  }
  const reserved = gpu.mem_reserved_bytes ? `; ${formatBytes(gpu.mem_reserved_bytes)} reserved by the driver` : ''
  return { label: 'Mem', title: `${pct} of GPU memory in use${reserved}` }
}
