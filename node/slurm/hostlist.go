package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxHosts caps an expanded host list: a hostile or broken list
// ("n[0-999999999]") is refused instead of filling memory.
const maxHosts = 100_000

// errHostlist is wrapped by ExpandHostlist's errors.
var errHostlist = errors.New("bad slurm host list")

// ExpandHostlist expands Slurm's compressed host list ("node[1-3,05]",
// "a,b[1-2]", "r[1-2]-n[01-02]") into names, in order, keeping each
// range's zero padding.
func ExpandHostlist(s string) ([]string, error) {
	var out []string
	for _, item := range splitBrackets(strings.TrimSpace(s)) {
		if item == "" {
			continue
		}
		names, err := expandOne(item, maxHosts-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitBrackets splits at commas outside brackets.
func splitBrackets(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// expandOne expands one name with zero or more bracket groups.
func expandOne(item string, room int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, fmt.Errorf("%w: %q", errHostlist, item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("%w: %q has no ]", errHostlist, item)
	}
	end += open
	prefix, ranges, rest := item[:open], item[open+1:end], item[end+1:]
	tails, err := expandOne(rest, room)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		lo, hi, width, err := parseRange(r)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %v", errHostlist, item, err)
		}
		if (hi-lo+1)*len(tails) > room-len(out) {
			return nil, fmt.Errorf("%w: more than %d hosts", errHostlist, maxHosts)
		}
		for n := lo; n <= hi; n++ {
			num := fmt.Sprintf("%0*d", width, n)
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}

// parseRange reads "3", "01-12": the bounds and the zero-padded width.
func parseRange(r string) (lo, hi, width int, err error) {
	a, b, isRange := strings.Cut(r, "-")
	if lo, err = strconv.Atoi(a); err != nil || lo < 0 || a == "" || a[0] == '+' {
		return 0, 0, 0, fmt.Errorf("range %q", r)
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(b); err != nil || hi < lo || b == "" || b[0] == '+' {
			return 0, 0, 0, fmt.Errorf("range %q", r)
		}
	}
	width = 0
	if len(a) > 1 && a[0] == '0' {
		width = len(a)
	}
	return lo, hi, width, nil
}
