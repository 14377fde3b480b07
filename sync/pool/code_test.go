package pool_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/labpool/labpool/sync/pool"
)

// fixedCode's text holds the letters O, I and B, which people type as digits.
func fixedCode(t *testing.T) pool.Code {
	for i := range 256 {
		c := pool.Code{Pool: pool.ID{1, 2, 3, 4, 5, 6, 7, byte(i)}, Secret: [16]byte{0xde, 0xad, byte(i)}}
		if s := c.String(); strings.ContainsAny(s, "O") && strings.ContainsAny(s, "I") && strings.ContainsAny(s, "B") {
			return c
		}
	}
	t.Fatal("no fixed code spells O, I and B")
	return pool.Code{}
}

func TestParseCode(t *testing.T) {
	c := fixedCode(t)
	s := c.String()
	plain := strings.ReplaceAll(s, "-", "")
	tests := []struct {
		name, in string
		want     pool.Code
		wantErr  error
	}{
		{"canonical", s, c, nil},
		{"lowercase", strings.ToLower(s), c, nil},
		{"no dashes", plain, c, nil},
		{"spaces", strings.ReplaceAll(s, "-", " ") + "\n", c, nil},
		{"digits for letters", strings.NewReplacer("O", "0", "I", "1", "B", "8").Replace(s), c, nil},
		{"empty", "", pool.Code{}, pool.ErrBadCode},
		{"truncated", s[:20], pool.Code{}, pool.ErrBadCode},
		{"too long", s + "A", pool.Code{}, pool.ErrBadCode},
		{"bad character", "9" + plain[1:], pool.Code{}, pool.ErrBadCode},
		{"peer id", "AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA-AAAA", pool.Code{}, pool.ErrBadCode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pool.ParseCode(tt.in)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("ParseCode(%q) = %v, %v; want %v, %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestParseCodeCatchesTypos tries every single-character typo and every
// swap of neighbours: the checksum must reject each one.
func TestParseCodeCatchesTypos(t *testing.T) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	for range 5 {
		c, err := pool.NewCode()
		if err != nil {
			t.Fatal(err)
		}
		plain := []byte(strings.ReplaceAll(c.String(), "-", ""))
		for i := range plain {
			for _, r := range []byte(alphabet) {
				if r == plain[i] {
					continue
				}
				typo := append([]byte(nil), plain...)
				typo[i] = r
				if _, err := pool.ParseCode(string(typo)); !errors.Is(err, pool.ErrBadCode) {
					t.Fatalf("typo %q of %q accepted", typo, plain)
				}
			}
			if i+1 < len(plain) && plain[i] != plain[i+1] {
				swap := append([]byte(nil), plain...)
				swap[i], swap[i+1] = swap[i+1], swap[i]
				if _, err := pool.ParseCode(string(swap)); !errors.Is(err, pool.ErrBadCode) {
					t.Fatalf("swap %q of %q accepted", swap, plain)
				}
			}
		}
	}
}

func TestNewCode(t *testing.T) {
	a, err := pool.NewCode()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pool.NewCode()
	if a == b || a.Secret == ([16]byte{}) {
		t.Fatalf("NewCode not random: %v %v", a, b)
	}
	if s := a.String(); len(s) != 47 || strings.Count(s, "-") != 5 {
		t.Errorf("String() = %q; want 6 groups of 7", s)
	}
	id, err := pool.ParseID(a.PoolID())
	if err != nil || id != a.Pool || len(a.PoolID()) != 16 {
		t.Errorf("pool id %q round trip = %v, %v", a.PoolID(), id, err)
	}
	if _, err := pool.ParseID("xyz"); !errors.Is(err, pool.ErrBadPoolID) {
		t.Errorf("ParseID(xyz) = %v; want ErrBadPoolID", err)
	}
}

func FuzzParseCode(f *testing.F) {
	c, _ := pool.NewCode()
	f.Add(c.String())
	f.Add(strings.ToLower(c.String()))
	f.Add("")
	f.Add("0000000-1111111-8888888")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := pool.ParseCode(s)
		if err != nil {
			if !errors.Is(err, pool.ErrBadCode) {
				t.Fatalf("ParseCode(%q) error %v does not wrap ErrBadCode", s, err)
			}
			return
		}
		again, err := pool.ParseCode(c.String())
		if err != nil || again != c {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}
