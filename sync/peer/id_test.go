package peer_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/labpool/labpool/sync/peer"
)

func TestIDString(t *testing.T) {
	id := peer.NewID([]byte("test key"))
	s := id.String()
	if len(s) != 64 || strings.Count(s, "-") != 12 {
		t.Fatalf("String() = %q; want 13 groups of 4", s)
	}
	if s != strings.ToUpper(s) {
		t.Errorf("String() = %q; want upper case", s)
	}
	if got, want := id.Short(), s[:9]; got != want || len(got) != 9 || got[4] != '-' {
		t.Errorf("Short() = %q; want %q", got, want)
	}
}

func TestParseID(t *testing.T) {
	id := peer.NewID([]byte("test key"))
	canonical := id.String()
	plain := strings.ReplaceAll(canonical, "-", "")
	// The last character holds 4 unused bits: flip one to make a
	// non-canonical spelling of the same bytes.
	last := plain[len(plain)-1]
	nonCanonical := plain[:len(plain)-1] + string(map[bool]byte{true: 'B', false: 'A'}[last == 'A'])
	tests := []struct {
		name, in string
		want     peer.ID
		wantErr  error
	}{
		{"canonical", canonical, id, nil},
		{"lowercase", strings.ToLower(canonical), id, nil},
		{"no dashes", plain, id, nil},
		{"lowercase no dashes", strings.ToLower(plain), id, nil},
		{"spaces around", "  " + canonical + "\n", id, nil},
		{"empty", "", peer.ID{}, peer.ErrInvalid},
		{"truncated", canonical[:10], peer.ID{}, peer.ErrInvalid},
		{"too long", canonical + "A", peer.ID{}, peer.ErrInvalid},
		{"bad alphabet", "1" + plain[1:], peer.ID{}, peer.ErrInvalid},
		{"padding", plain[:51] + "=", peer.ID{}, peer.ErrInvalid},
		{"non-canonical tail", nonCanonical, peer.ID{}, peer.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := peer.ParseID(tt.in)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("ParseID(%q) = %v, %v; want %v, %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestIDText(t *testing.T) {
	id := peer.NewID([]byte("json"))
	b, err := json.Marshal(map[string]peer.ID{"id": id})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"` + id.String() + `"}`; string(b) != want {
		t.Fatalf("json = %s; want %s", b, want)
	}
	var back map[string]peer.ID
	if err := json.Unmarshal(b, &back); err != nil || back["id"] != id {
		t.Fatalf("round trip = %v, %v; want %v", back["id"], err, id)
	}
	var bad peer.ID
	if err := bad.UnmarshalText([]byte("nope")); !errors.Is(err, peer.ErrInvalid) {
		t.Errorf("UnmarshalText(nope) = %v; want ErrInvalid", err)
	}
}

func TestIDIsZeroAndLog(t *testing.T) {
	var zero peer.ID
	id := peer.NewID([]byte("x"))
	if !zero.IsZero() || id.IsZero() {
		t.Errorf("IsZero: zero=%v id=%v", zero.IsZero(), id.IsZero())
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("hi", "peer", id)
	if want := "peer=" + id.Short(); !strings.Contains(buf.String(), want) {
		t.Errorf("log = %q; want it to contain %q", buf.String(), want)
	}
}

func FuzzParseID(f *testing.F) {
	id := peer.NewID([]byte("seed"))
	f.Add(id.String())
	f.Add(strings.ToLower(id.String()))
	f.Add(strings.ReplaceAll(id.String(), "-", ""))
	f.Add("")
	f.Add("AAAA-AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := peer.ParseID(s)
		if err != nil {
			if !errors.Is(err, peer.ErrInvalid) {
				t.Fatalf("ParseID(%q) error %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		again, err := peer.ParseID(id.String())
		if err != nil || again != id {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
		norm := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
		if norm != strings.ReplaceAll(id.String(), "-", "") {
			t.Fatalf("ParseID(%q) accepted a second spelling of %v", s, id)
		}
	})
}
