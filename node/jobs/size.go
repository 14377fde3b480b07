package jobs

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits maps a unit suffix (lowercase) to bytes. Single letters and
// "iB" units are binary, as in docker's --memory; "kB", "MB", "GB", "TB" are
// decimal.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// ParseSize reads a size such as "32g", "20GiB", "512m", "1.5TB" or "4096"
// (bytes) and returns bytes.
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	i := strings.IndexFunc(in, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := in, ""
	if i >= 0 {
		num, unit = in[:i], strings.ToLower(strings.TrimSpace(in[i:]))
	}
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("size %q: want a number with an optional unit, e.g. 512m, 32g, 20GiB", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: %q is not a number", s, num)
	}
	b := v * mult
	if b > math.MaxInt64/2 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(b), nil
}
