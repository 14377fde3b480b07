package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestEscape: every character a terminal acts on instead of showing, in a
// string another machine wrote, comes out as visible text; the rest is kept.
func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "train-bert", "train-bert"},
		{"unicode text", "résumé 训练 ✓", "résumé 训练 ✓"},
		{"newline and tab kept", "a\tb\nc", "a\tb\nc"},
		{"ESC", "a\x1bb", `a\x1bb`},
		{"window title OSC", "\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"clipboard OSC 52", "\x1b]52;c;cm0gLXJmIH4=\x1b\\", `\x1b]52;c;cm0gLXJmIH4=\x1b\`},
		{"CSI erase line", "\x1b[2K\x1b[1A", `\x1b[2K\x1b[1A`},
		{"C1 CSI as UTF-8", "a\u009b2Jb", `a\u009b2Jb`},
		{"C1 CSI as a raw byte", "a\x9b2Jb", `a\x9b2Jb`},
		{"C1 OSC", "\u009d0;t\u009c", `\u009d0;t\u009c`},
		{"BEL", "ding\a", `ding\x07`},
		{"carriage return", "ok\rFAILED", `ok\x0dFAILED`},
		{"backspace", "abc\b\b", `abc\x08\x08`},
		{"DEL", "a\x7f", `a\u007f`},
		{"bidi override", "gpu\u202Etxt.exe", `gpu\u202etxt.exe`},
		{"bidi isolate", "\u2066a\u2069", `\u2066a\u2069`},
		{"right-to-left mark", "a\u200fb", `a\u200fb`},
		{"line separator", "a\u2028b", `a\u2028b`},
		{"incomplete UTF-8 at the end", "ok\xe2\x80", `ok\xe2\x80`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Escape(tt.in); got != tt.want {
				t.Errorf("Escape(%q) = %q; want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestEscapeField: a table cell keeps to its line and column too: a newline
// or tab in another machine's string cannot forge a row or a column.
func TestEscapeField(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a\nb", `a\x0ab`},
		{"a\tb", `a\x09b`},
		{"a\x1b[31m", `a\x1b[31m`},
		{"plain", "plain"},
	}
	for _, tt := range tests {
		if got := field(tt.in); got != tt.want {
			t.Errorf("field(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// TestEscapeWriter: the writer that every verb's output goes through
// escapes across writes, and a character split between two writes is kept
// whole.
func TestEscapeWriter(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"one write", []string{"a\x1b]52;c;eA==\x07b\n"}, `a\x1b]52;c;eA==\x07b` + "\n"},
		{"rune split", []string{"a\xe2\x80", "\xaeb"}, `a\u202eb`},
		{"C1 split", []string{"a\xc2", "\x9b2J"}, `a\u009b2J`},
		{"text split", []string{"训"[:1], "训"[1:]}, "训"},
		{"bad byte then text", []string{"\xe2", "x"}, `\xe2x`},
		{"cut at the end", []string{"ok\xe2\x80"}, `ok\xe2\x80`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			w := newEscWriter(&buf)
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			w.Flush()
			if buf.String() != tt.want {
				t.Errorf("wrote %q; want %q", buf.String(), tt.want)
			}
		})
	}
}

// hostile is what a malicious pool member puts in the strings it writes:
// a window title, a clipboard write, a line overwritten, C1 CSI, a bidi
// override.
const hostile = "evil\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIH4=\x07\r\x1b[2K\u009b1A\u202Egpj.exe"

// assertInert fails when out holds a character a terminal acts on.
func assertInert(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\a", "\r", "\u009b", "\u202e"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s printed %q raw: %q", what, bad, out)
		}
	}
}
