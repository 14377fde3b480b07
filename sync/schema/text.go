package schema

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// CheckText refuses a record whose text could drive a terminal or reorder
// what a reader sees (rule RuleText): its key, or a string of its JSON data
// (object keys included), that carries a C0 or C1 control character, DEL
// or a bidi embedding, override or isolate (U+202A to U+202E, U+2066 to
// U+2069). A line break or a tab is let through in the values of the
// kind's Multiline fields only (in an array, the field that holds it); a
// carriage return never is.
//
// data is read as JSON without being decoded; CheckText never fails on
// data that is not JSON (the store refuses it apart).
func CheckText(kind, key string, data []byte) error {
	k, ok := Lookup(kind)
	if !ok {
		return &Refusal{RuleKind, fmt.Sprintf("record kind %.64q is not in the replica's schema", kind)}
	}
	for _, r := range key {
		if forbidden(r) {
			return &Refusal{RuleText, fmt.Sprintf("key of a %s record carries %U", kind, r)}
		}
	}
	field, r, ok := scanText(data, k.Multiline)
	if ok {
		return nil
	}
	return &Refusal{RuleText, fmt.Sprintf("%s record %.64q carries %U in field %.32q", kind, key, r, field)}
}

// forbidden reports whether r may appear in no text of a record.
func forbidden(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// lineRune reports whether r is a line break or a tab, which a Multiline
// field's values may carry.
func lineRune(r rune) bool { return r == '\n' || r == '\t' }

// scanText walks the strings of the JSON text data and returns the first
// one that carries a character CheckText refuses: the field it is in, the
// character, and false; or true when there is none.
func scanText(data []byte, multiline []string) (field string, bad rune, ok bool) {
	var stack []string // the field of each enclosing object or array
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '{':
			stack = append(stack, field)
			field = ""
		case '[':
			stack = append(stack, field)
		case '}', ']':
			if n := len(stack); n > 0 {
				field, stack = stack[n-1], stack[:n-1]
			}
		case '"':
			s := walkString(data, i+1)
			if nextIs(data, s.end+1, ':') { // an object's key
				field = string(data[i+1 : s.end])
				if s.control {
					return field, s.bad, false
				}
				if s.line {
					return field, s.lineRune, false
				}
			} else if s.control {
				return field, s.bad, false
			} else if s.line && !slices.Contains(multiline, field) {
				return field, s.lineRune, false
			}
			i = s.end
		}
	}
	return field, 0, true
}

// nextIs reports whether the first byte at or after i that is not JSON
// white space is c.
func nextIs(data []byte, i int, c byte) bool {
	for ; i < len(data); i++ {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return data[i] == c
	}
	return false
}

// text is what walkString found in one JSON string.
type text struct {
	end      int  // the index of its closing quote, or len(data)
	control  bool // it carries bad, the first forbidden character but line breaks and tabs
	bad      rune
	line     bool // it carries lineRune, its first line break or tab
	lineRune rune
}

// walkString decodes the JSON string whose text starts at i (escapes
// included) up to its closing quote. Bytes that are not UTF-8 are skipped
// (a JSON decoder reads them as U+FFFD).
func walkString(data []byte, i int) text {
	var t text
	for i < len(data) {
		c := data[i]
		var r rune
		switch {
		case c == '"':
			t.end = i
			return t
		case c == '\\' && i+1 < len(data):
			r, i = unescape(data, i+1)
		case c < utf8.RuneSelf:
			r, i = rune(c), i+1
		default:
			var n int
			r, n = utf8.DecodeRune(data[i:])
			i += n
		}
		switch {
		case !forbidden(r):
		case lineRune(r):
			if !t.line {
				t.line, t.lineRune = true, r
			}
		case !t.control:
			t.control, t.bad = true, r
		}
	}
	t.end = len(data)
	return t
}

// unescape decodes the escape whose letter is at i, and returns the
// character and the index after the escape.
func unescape(data []byte, i int) (rune, int) {
	switch data[i] {
	case 'n':
		return '\n', i + 1
	case 't':
		return '\t', i + 1
	case 'r':
		return '\r', i + 1
	case 'b':
		return '\b', i + 1
	case 'f':
		return '\f', i + 1
	case 'u':
		if i+5 > len(data) {
			return utf8.RuneError, len(data)
		}
		var r rune
		for _, h := range data[i+1 : i+5] {
			switch {
			case h >= '0' && h <= '9':
				r = r<<4 | rune(h-'0')
			case h >= 'a' && h <= 'f':
				r = r<<4 | rune(h-'a'+10)
			case h >= 'A' && h <= 'F':
				r = r<<4 | rune(h-'A'+10)
			default:
				return utf8.RuneError, i + 1
			}
		}
		return r, i + 5
	}
	return rune(data[i]), i + 1 // \" \\ \/ (or not JSON)
}
