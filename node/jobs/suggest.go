package jobs

import (
	"fmt"
	"math"
	"strconv"
)

// ShareSuggestion is a GPU share that a job's measured peak would fit:
// what a plan offers after the job's first run on a whole GPU.
type ShareSuggestion struct {
	Share    float64 `json:"share"`     // --gpu-share
	MemBytes uint64  `json:"mem_bytes"` // --gpu-mem
	// PeakMemBytes and PeakUtilPercent are what the run peaked at.
	PeakMemBytes    uint64  `json:"peak_mem_bytes"`
	PeakUtilPercent float64 `json:"peak_util_percent"`
	// Text says it in one sentence: "peaked at 18 GiB and 30% SM:
	// `--gpu-share 0.5 --gpu-mem 24GiB` would fit".
	Text string `json:"text"`
}

// Headroom over a peak, and the shares offered (a few, so that shares of
// one GPU add up without crumbs).
const (
	shareHeadroom = 1.25
	maxSuggested  = 0.5
)

var suggestedShares = []float64{0.125, 0.25, 0.5}

// SuggestShare is the share a job that peaked at peakMem bytes of GPU
// memory and peakUtil percent SM busy, on a GPU of gpuMem bytes, would
// fit: its memory cap a quarter above the peak, rounded up (to a GiB up to
// 8 GiB, then to 4 GiB); its share the least offered that covers a quarter
// above the SM peak and the cap's part of the GPU's memory. None (false)
// where nothing was measured, or where the job needs more than half the
// GPU: a whole GPU fits it better.
func SuggestShare(peakMem, gpuMem uint64, peakUtil float64) (ShareSuggestion, bool) {
	if gpuMem == 0 || peakMem == 0 || math.IsNaN(peakUtil) || peakUtil < 0 || peakUtil > 100 {
		return ShareSuggestion{}, false
	}
	capBytes := roundUpMem(uint64(math.Ceil(float64(peakMem) * shareHeadroom)))
	if capBytes > gpuMem {
		return ShareSuggestion{}, false
	}
	need := max(peakUtil*shareHeadroom/100, float64(capBytes)/float64(gpuMem))
	share := 0.0
	for _, s := range suggestedShares {
		if s >= need-1e-9 {
			share = s
			break
		}
	}
	if share == 0 || share > maxSuggested {
		return ShareSuggestion{}, false
	}
	return ShareSuggestion{Share: share, MemBytes: capBytes, PeakMemBytes: peakMem, PeakUtilPercent: peakUtil,
		Text: fmt.Sprintf("peaked at %s and %.0f%% SM: `--gpu-share %s --gpu-mem %dGiB` would fit",
			sayGiB(peakMem), math.Ceil(peakUtil), strconv.FormatFloat(share, 'f', -1, 64), capBytes>>30)}, true
}

// roundUpMem rounds a memory cap up: to a whole GiB up to 8 GiB, then to
// a multiple of 4 GiB.
func roundUpMem(b uint64) uint64 {
	step := uint64(1 << 30)
	if b > 8<<30 {
		step = 4 << 30
	}
	return (b + step - 1) / step * step
}

// sayGiB says b in GiB to a tenth ("18 GiB", "18.3 GiB").
func sayGiB(b uint64) string {
	v := math.Round(float64(b)/(1<<30)*10) / 10
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f GiB", v)
	}
	return fmt.Sprintf("%.1f GiB", v)
}
