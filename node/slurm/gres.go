package slurm

import (
	"sort"
	"strconv"
	"strings"
)

// GRES strings come in several spellings, all read here:
//
//	node config  "gpu:a100:4(S:0-1),gpu:v100:2"   (sinfo gres, scontrol Gres=)
//	node in use  "gpu:a100:3(IDX:0-2)"            (sinfo gres_used)
//	job asks     "gres:gpu:2", "gres/gpu:a100:2"  (squeue tres_per_node)
//	job TRES     "cpu=2,mem=1G,gres/gpu=2,gres/gpu:a100=2"
//
// Only the "gpu" GRES is counted; "(null)" and a missing type are "".

// splitTop splits s at commas that are not inside parentheses.
func splitTop(s string) []string {
	var out []string
	for i := topComma(s); i >= 0; i = topComma(s) {
		out, s = append(out, s[:i]), s[i+1:]
	}
	return append(out, s)
}

// gresItem reads one GRES item ("gpu:a100:4(S:0)", "gres/gpu=2"):
// whether it is a GPU, its type and its count.
func gresItem(item string) (typ string, count int, ok bool) {
	item = strings.TrimSpace(item)
	if i := strings.LastIndexByte(item, '('); i >= 0 && strings.HasSuffix(item, ")") && strings.Contains(item[i:], ":") {
		item = item[:i] // "(S:0-1)", "(IDX:0,2)"; not "(null)"
	}
	item = strings.TrimPrefix(strings.TrimPrefix(item, "gres/"), "gres:")
	countText := ""
	if i := strings.IndexByte(item, '='); i >= 0 {
		item, countText = item[:i], item[i+1:]
	}
	parts := strings.Split(item, ":")
	if parts[0] != "gpu" {
		return "", 0, false
	}
	parts = parts[1:]
	if countText == "" && len(parts) > 0 {
		if _, err := parseCount(parts[len(parts)-1]); err == nil {
			countText, parts = parts[len(parts)-1], parts[:len(parts)-1]
		}
	}
	if len(parts) > 0 {
		typ = parts[0]
	}
	if typ == "(null)" || typ == "N/A" {
		typ = ""
	}
	count = 1
	if countText != "" {
		n, err := parseCount(countText)
		if err != nil {
			return "", 0, false
		}
		count = n
	}
	return typ, count, true
}

// parseCount reads a GRES count, with Slurm's K/M/G suffixes.
func parseCount(s string) (int, error) {
	mult := 1
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K', 'k':
			mult, s = 1<<10, s[:n-1]
		case 'M', 'm':
			mult, s = 1<<20, s[:n-1]
		case 'G', 'g':
			mult, s = 1<<30, s[:n-1]
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 1<<20 {
		return 0, strconv.ErrRange
	}
	return min(n*mult, 1<<20), nil
}

// ParseGRES reads a GRES or TRES string and returns its GPUs by type
// (Total holds the counts), sorted by type. Where one string names GPUs
// both untyped and typed (TRES "gres/gpu=2,gres/gpu:a100=2"), the typed
// entries are kept and the untyped total only fills what they miss.
func ParseGRES(s string) []GPUCount {
	byType := map[string]int{}
	for _, item := range splitTop(s) {
		if typ, n, ok := gresItem(item); ok {
			byType[typ] += n
		}
	}
	if untyped, ok := byType[""]; ok && len(byType) > 1 {
		typed := 0
		for t, n := range byType {
			if t != "" {
				typed += n
			}
		}
		if typed >= untyped && strings.Contains(s, "=") {
			delete(byType, "")
		}
	}
	out := make([]GPUCount, 0, len(byType))
	for t, n := range byType {
		out = append(out, GPUCount{Type: t, Total: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// gpuTotal is the number of GPUs a GRES or TRES string names: the
// untyped count where the string has one (TRES "gres/gpu=8" beside
// "gres/gpu:a100=8"), else the sum of the typed ones. It allocates
// nothing: the poll calls it for every job on every tick.
func gpuTotal(s string) int {
	untyped, typed, hasUntyped := 0, 0, false
	for s != "" {
		item := s
		if i := topComma(s); i >= 0 {
			item, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		typ, n, ok := gresItem(item)
		switch {
		case !ok:
		case typ == "":
			untyped += n
			hasUntyped = true
		default:
			typed += n
		}
	}
	if hasUntyped && (untyped >= typed || typed == 0) {
		return untyped
	}
	return typed
}

// topComma is the index of the first comma outside parentheses, or -1.
func topComma(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

// mergeGPUs adds the counts of b into a, by type.
func mergeGPUs(a []GPUCount, b ...GPUCount) []GPUCount {
	for _, g := range b {
		found := false
		for i := range a {
			if a[i].Type == g.Type {
				a[i].Total += g.Total
				a[i].Alloc += g.Alloc
				found = true
				break
			}
		}
		if !found {
			a = append(a, g)
		}
	}
	sort.Slice(a, func(i, j int) bool { return a[i].Type < a[j].Type })
	return a
}

// withAlloc sets the Alloc of each type in total from the counts of used
// (a gres_used string read with ParseGRES). A used type that the total
// lacks (untyped use) is charged to the first types with room.
func withAlloc(total, used []GPUCount) []GPUCount {
	out := append([]GPUCount(nil), total...)
	rest := 0
	for _, u := range used {
		placed := false
		for i := range out {
			if out[i].Type == u.Type {
				out[i].Alloc += u.Total
				placed = true
			}
		}
		if !placed {
			rest += u.Total
		}
	}
	for i := range out {
		if rest == 0 {
			break
		}
		take := min(rest, out[i].Free())
		out[i].Alloc += take
		rest -= take
	}
	return out
}
