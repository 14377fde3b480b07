package schema_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/labpool/labpool/sync/schema"
)

// TestCheckText: text that could drive a terminal (finding 13: an alert
// message that set the window title and wrote the clipboard with OSC 52)
// or reorder what a reader sees is refused, naming the rule; line breaks
// and tabs only in the fields that carry them.
func TestCheckText(t *testing.T) {
	tests := []struct {
		name, kind, key, data string
		refused               bool
	}{
		{"plain", schema.KindJob, "j1", `{"name":"train","state":"running"}`, false},
		{"unicode names", schema.KindNode, "", `{"name":"Grüße 日本 🚀"}`, false},
		{"escaped quote and slash", schema.KindNode, "", `{"name":"a\"b\\c\/d"}`, false},
		{"OSC 52 raw escape", schema.KindAlert, "a1", "{\"message\":\"\x1b]52;c;ZXZpbA==\x07\"}", true},
		{"OSC title escaped", schema.KindAlert, "a1", `{"message":"\u001b]0;owned\u0007"}`, true},
		{"CSI as C1", schema.KindJob, "j1", `{"name":"x` + "\u009b" + `2J"}`, true},
		{"C1 escaped", schema.KindJob, "j1", `{"name":"\u009d0;t"}`, true},
		{"DEL", schema.KindJob, "j1", `{"name":"a\u007f"}`, true},
		{"bidi override", schema.KindFolder, "f", `{"name":"doc` + "\u202e" + `fdp.exe"}`, true},
		{"bidi isolate escaped", schema.KindFolder, "f", `{"name":"\u2066x"}`, true},
		{"newline in a name", schema.KindJob, "j1", `{"name":"a\nb"}`, true},
		{"tab in a name", schema.KindJob, "j1", `{"name":"a\tb"}`, true},
		{"newline in an error", schema.KindJob, "j1", `{"error":"line 1\nline 2\tx"}`, false},
		{"newline in a command line", schema.KindJob, "j1", `{"spec":{"cmd":["bash","-c","a\nb"],"name":"n"}}`, false},
		{"newline after the array", schema.KindJob, "j1", `{"spec":{"cmd":["a"],"name":"a\nb"}}`, true},
		{"newline in an object in the array", schema.KindJob, "j1", `{"cmd":[{"x":"a\nb"}]}`, true},
		{"carriage return in an error", schema.KindJob, "j1", `{"error":"ok\rfake"}`, true},
		{"escape in an error", schema.KindJob, "j1", `{"error":"a\n\u001b[2J"}`, true},
		{"newline in a message", schema.KindAlert, "a1", `{"message":"a\nb"}`, false},
		{"control in a field name", schema.KindJob, "j1", `{"na\u001bme":"x"}`, true},
		{"newline in a field name", schema.KindJob, "j1", `{"cmd\n":"x"}`, true},
		{"control in the key", schema.KindJob, "j\x1b1", `{}`, true},
		{"newline in the key", schema.KindJob, "j\n1", `{}`, true},
		{"empty data", schema.KindJob, "j1", ``, false},
		{"numbers and nulls", schema.KindSample1s, "000000000001", `{"a":[1,2.5e3,null,true,{"b":"c"}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := schema.CheckText(tt.kind, tt.key, []byte(tt.data))
			if !tt.refused {
				if err != nil {
					t.Fatalf("CheckText = %v; want allowed", err)
				}
				return
			}
			if !errors.Is(err, schema.ErrRefused) || !strings.HasSuffix(err.Error(), "(rule: "+schema.RuleText+")") {
				t.Fatalf("CheckText = %v; want a refusal naming rule %q", err, schema.RuleText)
			}
		})
	}
}

// FuzzCheckText: CheckText reads data from the network. It never panics,
// and what it lets through decodes, with encoding/json, to strings with no
// forbidden character (line breaks and tabs in Multiline values only).
func FuzzCheckText(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `{"error":"a\nb"}`, `{"cmd":["a\tb",{"x":"y"}]}`, `{"a\u001b":1}`, `["\u202e"]`, `"x`, `{"message":"\u009b"}`} {
		f.Add(schema.KindJob, s)
		f.Add(schema.KindAlert, s)
	}
	f.Fuzz(func(t *testing.T, kind, data string) {
		err := schema.CheckText(kind, "k", []byte(data))
		k, known := schema.Lookup(kind)
		if err != nil || !known || !json.Valid([]byte(data)) {
			return
		}
		var v any
		if json.Unmarshal([]byte(data), &v) != nil {
			return
		}
		if field, s, bad := badText(v, "", k.Multiline); bad {
			t.Fatalf("CheckText let through %q in field %q of %q", s, field, data)
		}
	})
}

// badText finds, in the decoded JSON v, a string that CheckText should
// have refused.
func badText(v any, field string, multiline []string) (string, string, bool) {
	switch v := v.(type) {
	case string:
		lines := slices.Contains(multiline, field)
		for _, r := range v {
			if isForbidden(r) && !(lines && (r == '\n' || r == '\t')) {
				return field, v, true
			}
		}
	case []any:
		for _, e := range v {
			if f, s, bad := badText(e, field, multiline); bad {
				return f, s, bad
			}
		}
	case map[string]any:
		for k, e := range v {
			if f, s, bad := badText(k, "", nil); bad {
				return f, s, bad
			}
			if f, s, bad := badText(e, k, multiline); bad {
				return f, s, bad
			}
		}
	}
	return "", "", false
}

func isForbidden(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
