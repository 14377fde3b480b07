package jobs

import (
	"math"
	"testing"
)

func TestSuggestShare(t *testing.T) {
	const GiB = 1 << 30
	tests := []struct {
		name     string
		peakMem  uint64
		gpuMem   uint64
		peakUtil float64
		share    float64 // 0: no suggestion
		memBytes uint64
		text     string
	}{
		{"the issue's example", 18 * GiB, 80 * GiB, 30, 0.5, 24 * GiB, "peaked at 18 GiB and 30% SM: `--gpu-share 0.5 --gpu-mem 24GiB` would fit"},
		{"a small notebook", 3 * GiB, 80 * GiB, 8, 0.125, 4 * GiB, "peaked at 3 GiB and 8% SM: `--gpu-share 0.125 --gpu-mem 4GiB` would fit"},
		{"a cap up to 8 GiB rounds to a GiB", 5*GiB + 1, 80 * GiB, 10, 0.125, 7 * GiB, ""},
		{"memory decides the share", 30 * GiB, 80 * GiB, 5, 0.5, 40 * GiB, ""},
		{"SM decides the share", 2 * GiB, 80 * GiB, 19, 0.25, 3 * GiB, ""},
		{"exactly a quarter after headroom", 2 * GiB, 80 * GiB, 20, 0.25, 3 * GiB, ""},
		{"more than half: a whole GPU", 10 * GiB, 80 * GiB, 45, 0, 0, ""},
		{"memory over half: a whole GPU", 40 * GiB, 80 * GiB, 10, 0, 0, ""},
		{"cap over the GPU", 70 * GiB, 80 * GiB, 5, 0, 0, ""},
		{"nothing measured", 0, 80 * GiB, 0, 0, 0, ""},
		{"no GPU memory known", 8 * GiB, 0, 10, 0, 0, ""},
		{"bad utilization", 8 * GiB, 80 * GiB, math.NaN(), 0, 0, ""},
		{"utilization over 100", 8 * GiB, 80 * GiB, 140, 0, 0, ""},
		{"fractional peak said to a tenth", 18*GiB + 300<<20, 80 * GiB, 29.2, 0.5, 24 * GiB, "peaked at 18.3 GiB and 30% SM: `--gpu-share 0.5 --gpu-mem 24GiB` would fit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ok := SuggestShare(tt.peakMem, tt.gpuMem, tt.peakUtil)
			if ok != (tt.share > 0) || s.Share != tt.share || s.MemBytes != tt.memBytes || (tt.text != "" && s.Text != tt.text) {
				t.Errorf("SuggestShare(%d, %d, %v) = %+v, %v; want share %v, cap %d, %q", tt.peakMem, tt.gpuMem, tt.peakUtil, s, ok, tt.share, tt.memBytes, tt.text)
			}
			if ok {
				if err := validateShare(Spec{GPUShare: s.Share, GPUMemBytes: s.MemBytes}); err != nil {
					t.Errorf("the suggestion is refused: %v", err)
				}
			}
		})
	}
}
