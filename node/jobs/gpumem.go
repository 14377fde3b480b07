package jobs

// GPUMemFor is the memory a GPU offers a job that asks for GPU memory
// (Spec.MinGPUMemBytes), from its reading (gpu.Stats): all of a discrete
// GPU's, which a job is granted whole; and the free part of a GPU with
// unified memory (a GB10, DGX Spark), whose memory is the system's, shared
// with the host and with every job there. Its used figure is the system's,
// so a job's use counts once, whether its processes hold it on the GPU
// (their figures are part of it) or on the CPU. The node that grants and
// the plan that previews (app) both weigh a GPU by it.
func GPUMemFor(total, used uint64, unified bool) uint64 {
	if !unified {
		return total
	}
	return total - min(used, total)
}
