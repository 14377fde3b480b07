package web

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadSSE(t *testing.T) {
	type ev struct {
		Name string
		Data string
	}
	tests := []struct {
		name string
		in   string
		want []ev
	}{
		{"one event", "event: pool:nodes\ndata: []\n\n", []ev{{"pool:nodes", "[]"}}},
		{"comments and keepalives", ": labpool events\n\n: keepalive\n\nevent: a\ndata: 1\n\n", []ev{{"a", "1"}}},
		{"no space after colon", "event:a\ndata:{\"x\":1}\n\n", []ev{{"a", `{"x":1}`}}},
		{"no name", "data: 2\n\n", []ev{{"", "2"}}},
		{"name without data is dropped", "event: a\n\nevent: b\ndata: 3\n\n", []ev{{"b", "3"}}},
		{"unterminated event is dropped", "event: a\ndata: 1\n\nevent: b\ndata: 2\n", []ev{{"a", "1"}}},
		{"two events", "event: a\ndata: 1\n\nevent: b\ndata: 2\n\n", []ev{{"a", "1"}, {"b", "2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []ev
			err := ReadSSE(strings.NewReader(tt.in), func(name string, data json.RawMessage) {
				got = append(got, ev{name, string(data)})
			})
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("ReadSSE at the end of the stream: %v, want io.ErrUnexpectedEOF", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadSSELongLine(t *testing.T) {
	big := `"` + strings.Repeat("x", 1<<20) + `"`
	var got int
	err := ReadSSE(strings.NewReader("event: big\ndata: "+big+"\n\n"), func(_ string, d json.RawMessage) { got = len(d) })
	if !errors.Is(err, io.ErrUnexpectedEOF) || got != len(big) {
		t.Errorf("a 1 MiB event: got %d bytes, %v", got, err)
	}
	err = ReadSSE(strings.NewReader("data: "+strings.Repeat("x", 9<<20)+"\n\n"), func(string, json.RawMessage) {})
	if err == nil || errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a line over 8 MiB: %v, want a read error", err)
	}
}

// FuzzReadSSE feeds the events decoder arbitrary streams: it must not panic
// and must hand over only data it read.
func FuzzReadSSE(f *testing.F) {
	f.Add("event: a\ndata: 1\n\n")
	f.Add(": c\n\nevent:\ndata:\n\n")
	f.Add("data: x\ndata: y\n\n\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		err := ReadSSE(strings.NewReader(in), func(name string, data json.RawMessage) {
			if len(data) == 0 || !strings.Contains(in, name) {
				t.Errorf("event %q with %d bytes of data from %q", name, len(data), in)
			}
		})
		if err == nil {
			t.Error("ReadSSE returned nil at the end of the stream")
		}
	})
}
