package slurm

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The JSON of Slurm's commands changes with its data_parser: v0.0.38
// (Slurm 22.05) prints numbers as numbers or null and states as strings;
// v0.0.40 and later (23.11+) print numbers as {"set","infinite","number"}
// objects and states as arrays of flags. The types here read both.

// number is a Slurm number in either form. Set is false for null and for
// an unset number; Infinite for an infinite one.
type number struct {
	Set      bool
	Infinite bool
	N        int64
}

func (n *number) UnmarshalJSON(b []byte) error {
	*n = number{}
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		return nil
	case b[0] == '{':
		var o struct {
			Set      bool            `json:"set"`
			Infinite bool            `json:"infinite"`
			Number   json.RawMessage `json:"number"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		n.Set, n.Infinite = o.Set, o.Infinite
		if o.Set && len(o.Number) > 0 {
			v, err := parseNumberText(o.Number)
			if err != nil {
				return err
			}
			n.N = v
		}
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil // "N/A", "UNLIMITED": not a number, not an error
		}
		n.Set, n.N = true, v
		return nil
	}
	v, err := parseNumberText(b)
	if err != nil {
		return err
	}
	n.Set, n.N = true, v
	return nil
}

// parseNumberText reads a JSON number, also a float or one past int64.
func parseNumberText(b []byte) (int64, error) {
	if v, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, err
	}
	if f > 9e18 || f < -9e18 {
		return 0, nil
	}
	return int64(f), nil
}

// value is the number, or def when it is unset or infinite.
func (n number) value(def int64) int64 {
	if !n.Set || n.Infinite {
		return def
	}
	return n.N
}

// flags is a state: one string (v0.0.38, "RUNNING") or an array
// (v0.0.40+, ["RUNNING","COMPLETING"]). The first is the base state.
type flags []string

func (f *flags) UnmarshalJSON(b []byte) error {
	*f = nil
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s != "" {
			*f = flags{s}
		}
		return nil
	}
	var a []string
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	*f = a
	return nil
}

func (f flags) has(s string) bool {
	for _, x := range f {
		if x == s {
			return true
		}
	}
	return false
}

// text is a string that an older or newer format may print as a number,
// an array of strings (joined with commas) or null.
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	*t = ""
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	switch b[0] {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = text(s)
	case '[':
		var a []string
		if err := json.Unmarshal(b, &a); err != nil {
			return err
		}
		s := ""
		for i, x := range a {
			if i > 0 {
				s += ","
			}
			s += x
		}
		*t = text(s)
	case '{':
		var n number
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		if n.Set {
			*t = text(strconv.FormatInt(n.N, 10))
		}
	default:
		*t = text(b)
	}
	return nil
}

// exitCode is a job's exit: v0.0.38 prints the raw wait status (768 is
// exit 3, 15 is signal 15); v0.0.40+ an object with status, return_code
// and signal.
type exitCode struct {
	Code   int
	Signal int
}

func (e *exitCode) UnmarshalJSON(b []byte) error {
	*e = exitCode{}
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	if b[0] == '{' {
		var o struct {
			Status     flags  `json:"status"`
			ReturnCode number `json:"return_code"`
			Signal     struct {
				ID number `json:"id"`
			} `json:"signal"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		e.Code = int(o.ReturnCode.value(0))
		if o.Status.has("SIGNALED") || o.Status.has("CORE_DUMPED") {
			e.Signal = int(o.Signal.ID.value(0))
		}
		return nil
	}
	var n number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	raw := n.value(0)
	e.Code = int((raw >> 8) & 0xff)
	e.Signal = int(raw & 0x7f)
	return nil
}
