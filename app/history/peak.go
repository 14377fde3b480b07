package history

import "slices"

// Peak is the highest GPU memory used and SM busy percentage of the GPUs
// indexes over pts (each point's highest, not its mean); ok is false when
// none of them reported.
func Peak(pts []Point, indexes []int) (memBytes uint64, utilPercent float64, ok bool) {
	var mem float64
	for _, p := range pts {
		for _, g := range p.GPUs {
			if g.N == 0 || !slices.Contains(indexes, g.Index) {
				continue
			}
			ok = true
			mem = max(mem, finite(g.M[gpuMemUsed].Max))
			utilPercent = max(utilPercent, finite(g.M[gpuUtil].Max))
		}
	}
	return uint64(mem), min(utilPercent, 100), ok
}

func finite(v float64) float64 {
	if v != v || v < 0 || v > 1e18 {
		return 0
	}
	return v
}
