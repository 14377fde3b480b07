package jobs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/gpu"
)

// islands is n GPUs at 40 °C where GPUs in the same group of size share
// links NVLinks, PIX within a group and SYS across.
func islands(n, size, links int) []Candidate {
	cs := make([]Candidate, n)
	for i := range cs {
		cs[i] = Candidate{Index: i, UUID: fmt.Sprintf("GPU-%d", i), TempC: 40, Health: gpu.HealthOK}
		for k := range n {
			if k == i {
				continue
			}
			l := gpu.Link{Peer: k, PCIe: "SYS"}
			if i/size == k/size {
				l.NVLinks, l.PCIe = links, "PIX"
			}
			cs[i].Links = append(cs[i].Links, l)
		}
	}
	return cs
}

func indexes(cs []Candidate) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.Index
	}
	return out
}

func TestPlace(t *testing.T) {
	hot := func(cs []Candidate, i int, temp float64, reason string) []Candidate {
		cs[i].TempC = temp
		if reason != "" {
			cs[i].Health, cs[i].HealthReason = gpu.HealthWarning, reason
		}
		return cs
	}
	tests := []struct {
		name     string
		free     []Candidate
		n        int
		want     []int
		whyHas   []string
		whyLacks []string
	}{
		{"an NVLinked set over the lowest indexes", islands(8, 4, 4)[1:], 4, []int{4, 5, 6, 7},
			[]string{"GPUs 4,5,6,7", "every pair NVLinked (at least 4 links)"}, nil},
		{"a pair within an island", islands(8, 2, 2)[1:], 2, []int{2, 3},
			[]string{"every pair NVLinked (at least 2 links)"}, nil},
		{"the throttling GPU at 91 °C is avoided", hot(islands(8, 8, 18), 2, 91, "throttled: hw_thermal_slowdown"), 4, []int{0, 1, 3, 4},
			[]string{"avoided GPU 2 (throttled: hw_thermal_slowdown at 91 °C)", "every pair NVLinked (at least 18 links)"}, []string{"took"}},
		{"a hot GPU without a throttle reason is avoided", hot(islands(4, 4, 0), 0, 88, ""), 2, []int{1, 2},
			[]string{"avoided GPU 0 (hot at 88 °C)"}, nil},
		{"cool before NVLink", hot(islands(4, 2, 4), 1, 90, "throttled: hw_slowdown"), 2, []int{2, 3},
			[]string{"GPUs 2,3", "avoided GPU 1"}, nil},
		{"a hot GPU taken when no cooler one is free", hot(islands(4, 4, 18), 3, 92, "throttled: hw_thermal_slowdown"), 4, []int{0, 1, 2, 3},
			[]string{"took GPU 3 (throttled: hw_thermal_slowdown at 92 °C): no cooler GPU free"}, []string{"avoided"}},
		{"the coolest of equals", func() []Candidate {
			cs := islands(4, 4, 0)
			cs[0].TempC, cs[1].TempC = 60, 55
			return cs
		}(), 2, []int{2, 3}, []string{"GPUs 2,3", "the coolest"}, nil},
		{"no NVLink: the nearest PCIe", func() []Candidate {
			cs := islands(4, 2, 0) // PIX within pairs, no links
			return cs[1:]
		}(), 2, []int{2, 3}, []string{"GPUs 2,3"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := Place(tt.free, tt.n)
			if !slices.Equal(indexes(got), tt.want) {
				t.Errorf("Place picked %v (%s); want %v", indexes(got), why, tt.want)
			}
			for _, s := range tt.whyHas {
				if !strings.Contains(why, s) {
					t.Errorf("reason %q lacks %q", why, s)
				}
			}
			for _, s := range tt.whyLacks {
				if strings.Contains(why, s) {
					t.Errorf("reason %q says %q", why, s)
				}
			}
		})
	}
}

func TestPlaceTooFew(t *testing.T) {
	if got, why := Place(islands(2, 2, 2), 3); got != nil || why != "" {
		t.Errorf("Place(2 free, 3) = %v, %q; want nothing", got, why)
	}
}

// TestPlaceManyGPUs: past maxSets sets, Place takes the coolest, unthrottled first.
func TestPlaceManyGPUs(t *testing.T) {
	cs := islands(32, 32, 18)
	cs[0].TempC, cs[0].Health, cs[0].HealthReason = 91, gpu.HealthWarning, "throttled: hw_thermal_slowdown"
	got, why := Place(cs, 8)
	if want := []int{1, 2, 3, 4, 5, 6, 7, 8}; !slices.Equal(indexes(got), want) {
		t.Errorf("Place picked %v; want %v", indexes(got), want)
	}
	if !strings.Contains(why, "avoided GPU 0") {
		t.Errorf("reason %q does not say GPU 0 was avoided", why)
	}
}

// TestGrantPlaces: the ledger grants what Place picks, with the links set
// at start.
func TestGrantPlaces(t *testing.T) {
	l := NewLedger()
	cs := islands(8, 4, 4)
	var infos []gpu.Info
	var stats []gpu.Stats
	for _, c := range cs {
		infos = append(infos, gpu.Info{Index: c.Index, UUID: c.UUID, Links: c.Links})
		stats = append(stats, gpu.Stats{Index: c.Index, UUID: c.UUID, TempC: 40, Health: gpu.HealthOK, MemTotalBytes: 80 << 30})
	}
	stats[6].TempC, stats[6].Health, stats[6].HealthReason = 91, gpu.HealthWarning, "throttled: hw_thermal_slowdown"
	l.SetTopology(infos)
	if _, err := l.Grant("a", Request{Count: 1}, stats, nil); err != nil { // takes GPU 0
		t.Fatal(err)
	}
	got, err := l.Grant("b", Request{Count: 3}, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 1,2,3 are NVLinked and cool; 4,5,7 too, but 1,2,3 are lower.
	if want := []string{"GPU-1", "GPU-2", "GPU-3"}; !slices.Equal(got, want) {
		t.Errorf("granted %v; want %v", got, want)
	}
	got, err = l.Grant("c", Request{Count: 2}, stats, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"GPU-4", "GPU-5"}; !slices.Equal(got, want) {
		t.Errorf("granted %v; want %v (GPU 6 is throttling)", got, want)
	}
}

func BenchmarkPlace16Choose8(b *testing.B) {
	cs := islands(16, 8, 18)
	for b.Loop() {
		Place(cs, 8)
	}
}

func BenchmarkPlace8Choose4(b *testing.B) {
	cs := islands(8, 4, 4)
	for b.Loop() {
		Place(cs, 4)
	}
}
