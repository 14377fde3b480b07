package jobs

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/labpool/labpool/node/gpu"
)

// HotC is the temperature (°C) from which placement avoids a GPU while a
// cooler one is free: it runs slower and throttles soon.
const HotC = 85

// Candidate is one free GPU a request for a count may get, with what
// placement weighs: its heat, its health and how it reaches the others.
type Candidate struct {
	Index        int
	UUID         string
	TempC        float64
	Health       string     // gpu.HealthOK or gpu.HealthWarning (throttling, ECC)
	HealthReason string     // why it is not ok
	Links        []gpu.Link // to the other GPUs of its machine (gpu.Info.Links)
}

// hot says why c is avoided while others are free, "" when it is not.
func (c Candidate) hot() string {
	switch {
	case c.Health == gpu.HealthWarning && c.HealthReason != "":
		return fmt.Sprintf("%s at %.0f °C", c.HealthReason, c.TempC)
	case c.Health == gpu.HealthWarning:
		return fmt.Sprintf("warning at %.0f °C", c.TempC)
	case c.TempC >= HotC:
		return fmt.Sprintf("hot at %.0f °C", c.TempC)
	}
	return ""
}

// link is how c reaches the GPU at index peer.
func (c Candidate) link(peer int) gpu.Link {
	for _, l := range c.Links {
		if l.Peer == peer {
			return l
		}
	}
	return gpu.Link{Peer: peer}
}

// maxSets bounds the sets Place compares; past it, it takes the coolest.
const maxSets = 20000

// Place picks n of free (GPUs already free for the request) for one job,
// in index order, and says why: "GPUs 0,1,3,4" and, where the choice
// weighed anything, "; " and what it weighed. It is the placement rule, pure, used by the
// node that grants and by the plan that previews: first it avoids hot or
// throttling GPUs (see Candidate.hot), then, for several GPUs, it prefers
// a set whose every pair shares NVLink (the most links, then the closest
// PCIe), then the coolest, then the lowest indexes. Fewer than n free: nil.
func Place(free []Candidate, n int) ([]Candidate, string) {
	if n <= 0 || len(free) < n {
		return nil, ""
	}
	free = slices.SortedFunc(slices.Values(free), func(a, b Candidate) int { return cmp.Compare(a.Index, b.Index) })
	var best []Candidate
	var bestScore setScore
	if binomial(len(free), n) <= maxSets {
		m := newPairs(free)
		var bestIdx []int
		combinations(len(free), n, func(idx []int) {
			if sc := m.score(idx); bestIdx == nil || sc.less(bestScore) {
				bestIdx, bestScore = append(bestIdx[:0], idx...), sc
			}
		})
		best = make([]Candidate, n)
		for k, i := range bestIdx {
			best[k] = free[i]
		}
	} else {
		best = slices.SortedFunc(slices.Values(free), func(a, b Candidate) int {
			return cmp.Or(cmp.Compare(isHot(a), isHot(b)), cmp.Compare(a.TempC, b.TempC), cmp.Compare(a.Index, b.Index))
		})[:n]
		slices.SortFunc(best, func(a, b Candidate) int { return cmp.Compare(a.Index, b.Index) })
		bestScore = newPairs(best).score(seq(n))
	}
	return best, explain(free, best, bestScore)
}

// pairs holds, for candidates by position, what score weighs.
type pairs struct {
	hot     []int
	temp    []float64
	nvlinks [][]int
	pcie    [][]int
}

func newPairs(cs []Candidate) pairs {
	p := pairs{hot: make([]int, len(cs)), temp: make([]float64, len(cs)),
		nvlinks: make([][]int, len(cs)), pcie: make([][]int, len(cs))}
	for i, c := range cs {
		p.hot[i], p.temp[i] = isHot(c), c.TempC
		p.nvlinks[i], p.pcie[i] = make([]int, len(cs)), make([]int, len(cs))
		for k, d := range cs {
			l := c.link(d.Index)
			p.nvlinks[i][k], p.pcie[i][k] = l.NVLinks, pcieDistance[l.PCIe]
		}
	}
	return p
}

// score weighs the candidates at positions idx as one set.
func (p pairs) score(idx []int) setScore {
	s := setScore{minLinks: -1}
	for a, i := range idx {
		s.hot += p.hot[i]
		s.tempSum += p.temp[i]
		for _, k := range idx[a+1:] {
			nv := p.nvlinks[i][k]
			if nv == 0 {
				s.unlinked++
			}
			if s.minLinks < 0 || nv < s.minLinks {
				s.minLinks = nv
			}
			s.pcie += p.pcie[i][k]
		}
	}
	return s
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// setScore is what Place compares sets by, most important first.
type setScore struct {
	hot      int     // GPUs hot or throttling
	unlinked int     // pairs without NVLink
	minLinks int     // the fewest NVLinks of a pair (more is better)
	pcie     int     // sum of the pairs' PCIe distances
	tempSum  float64 // °C
}

func (a setScore) less(b setScore) bool {
	return cmp.Or(cmp.Compare(a.hot, b.hot), cmp.Compare(a.unlinked, b.unlinked), cmp.Compare(b.minLinks, a.minLinks),
		cmp.Compare(a.pcie, b.pcie), cmp.Compare(a.tempSum, b.tempSum)) < 0
}

// pcieDistance ranks nvidia-smi's PCIe relations, nearest first; an unknown
// one ranks with SYS.
var pcieDistance = map[string]int{"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5, "": 5}

// explain says why Place chose set from free.
func explain(free, set []Candidate, sc setScore) string {
	var parts []string
	parts = append(parts, "GPUs "+indexList(set))
	if len(set) > 1 {
		switch {
		case sc.unlinked == 0:
			parts = append(parts, fmt.Sprintf("every pair NVLinked (at least %d links)", sc.minLinks))
		case sc.unlinked < len(set)*(len(set)-1)/2:
			parts = append(parts, fmt.Sprintf("%d pairs without NVLink (no free set has fewer)", sc.unlinked))
		case hasNVLink(free):
			parts = append(parts, "no NVLink between them (none of the free NVLinked GPUs would do)")
		}
	}
	var avoided, taken []string
	for _, c := range free {
		why := c.hot()
		if why == "" {
			continue
		}
		if slices.ContainsFunc(set, func(s Candidate) bool { return s.Index == c.Index }) {
			taken = append(taken, fmt.Sprintf("GPU %d (%s)", c.Index, why))
		} else {
			avoided = append(avoided, fmt.Sprintf("GPU %d (%s)", c.Index, why))
		}
	}
	if len(avoided) > 0 {
		parts = append(parts, "avoided "+strings.Join(avoided, ", "))
	}
	if len(taken) > 0 {
		parts = append(parts, "took "+strings.Join(taken, ", ")+": no cooler GPU free")
	}
	if len(avoided) == 0 && len(taken) == 0 && len(set) < len(free) && warmer(free, set) {
		parts = append(parts, "the coolest")
	}
	return strings.Join(parts, "; ")
}

// warmer says whether a GPU of free left out of set is warmer than one in it.
func warmer(free, set []Candidate) bool {
	hottest := set[0].TempC
	for _, c := range set {
		hottest = max(hottest, c.TempC)
	}
	for _, c := range free {
		if c.TempC > hottest {
			return true
		}
	}
	return false
}

// isHot is 1 when c is hot or throttling, else 0.
func isHot(c Candidate) int {
	if c.hot() != "" {
		return 1
	}
	return 0
}

func hasNVLink(cs []Candidate) bool {
	for _, c := range cs {
		for _, l := range c.Links {
			if l.NVLinks > 0 {
				return true
			}
		}
	}
	return false
}

// indexList writes indexes as "0,1,3".
func indexList(set []Candidate) string {
	s := make([]string, len(set))
	for i, c := range set {
		s[i] = strconv.Itoa(c.Index)
	}
	return strings.Join(s, ",")
}

// combinations calls fn with each k-subset of 0..n-1, in lexicographic
// order (fn must not keep idx).
func combinations(n, k int, fn func(idx []int)) {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for {
		fn(idx)
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// binomial is n choose k, saturating past maxSets.
func binomial(n, k int) int {
	r := 1
	for i := range k {
		r = r * (n - i) / (i + 1)
		if r > maxSets {
			return maxSets + 1
		}
	}
	return r
}

// Weigh says what a set Place picked costs a job: how many of its GPUs are
// hot or throttling, and how many of its pairs share no NVLink. The planner
// compares machines by it before their load.
func Weigh(set []Candidate) (hot, unlinked int) {
	sc := newPairs(set).score(seq(len(set)))
	return sc.hot, sc.unlinked
}
