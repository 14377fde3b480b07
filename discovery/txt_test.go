package discovery

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testID is a device ID in canonical form.
const testID = "K7Q2-MX4P-ABCD-EFGH-IJKL-MNOP-QRST-UVWX-YZ23-4567-AAAA-BBBB-CCCC"

func TestTXTRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		txt  TXT
		want []string
	}{
		{"no pool", TXT{ID: testID, APIVersion: 1, Port: 4242},
			[]string{"id=" + testID, "v=1", "port=4242"}},
		{"pool", TXT{ID: testID, APIVersion: 12, Port: 65535, Pool: "lab_A-7"},
			[]string{"id=" + testID, "v=12", "port=65535", "pool=lab_A-7"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, err := tt.txt.Encode()
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if diff := cmp.Diff(tt.want, recs); diff != "" {
				t.Errorf("Encode (-want +got):\n%s", diff)
			}
			got, err := ParseTXT(recs)
			if err != nil || got != tt.txt {
				t.Errorf("ParseTXT(%q) = %+v, %v; want %+v", recs, got, err, tt.txt)
			}
		})
	}
}

func TestParseTXTAccepts(t *testing.T) {
	base := TXT{ID: testID, APIVersion: 1, Port: 4242}
	tests := []struct {
		name string
		in   []string
		want TXT
	}{
		{"any order", []string{"port=4242", "v=1", "id=" + testID}, base},
		{"unknown key ignored", []string{"id=" + testID, "v=1", "port=4242", "caps=gpu,mig"}, base},
		{"empty entry ignored", []string{"", "id=" + testID, "v=1", "port=4242"}, base},
		{"empty pool", []string{"id=" + testID, "v=1", "port=4242", "pool="}, base},
		{"unknown key with empty value", []string{"id=" + testID, "v=1", "port=4242", "x="}, base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTXT(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("ParseTXT(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseTXTRejects(t *testing.T) {
	ok := func(extra ...string) []string {
		return append([]string{"id=" + testID, "v=1", "port=4242"}, extra...)
	}
	without := func(drop string) []string {
		var out []string
		for _, r := range ok() {
			if !strings.HasPrefix(r, drop+"=") {
				out = append(out, r)
			}
		}
		return out
	}
	tests := []struct {
		name string
		in   []string
	}{
		{"nil", nil},
		{"no id", without("id")},
		{"no version", without("v")},
		{"no port", without("port")},
		{"duplicate id", ok("id=" + testID)},
		{"duplicate pool", ok("pool=a", "pool=b")},
		{"duplicate unknown is fine but bare key is not", ok("flag")},
		{"empty key", ok("=x")},
		{"key with control byte", ok("a\x00b=1")},
		{"long key", ok("abcdefghij=1")},
		{"id lowercase", []string{"id=" + strings.ToLower(testID), "v=1", "port=4242"}},
		{"id without dashes", []string{"id=" + strings.ReplaceAll(testID, "-", ""), "v=1", "port=4242"}},
		{"id short", []string{"id=K7Q2-MX4P", "v=1", "port=4242"}},
		{"id bad alphabet", []string{"id=" + strings.Replace(testID, "K", "1", 1), "v=1", "port=4242"}},
		{"id dash misplaced", []string{"id=" + "K7Q2M-X4P" + testID[9:], "v=1", "port=4242"}},
		{"version zero", []string{"id=" + testID, "v=0", "port=4242"}},
		{"version sign", []string{"id=" + testID, "v=+1", "port=4242"}},
		{"version negative", []string{"id=" + testID, "v=-1", "port=4242"}},
		{"version leading zero", []string{"id=" + testID, "v=01", "port=4242"}},
		{"version too big", []string{"id=" + testID, "v=10000", "port=4242"}},
		{"version space", []string{"id=" + testID, "v= 1", "port=4242"}},
		{"port zero", []string{"id=" + testID, "v=1", "port=0"}},
		{"port too big", []string{"id=" + testID, "v=1", "port=65536"}},
		{"port huge", []string{"id=" + testID, "v=1", "port=99999999999999999999"}},
		{"port hex", []string{"id=" + testID, "v=1", "port=0x10"}},
		{"port empty", []string{"id=" + testID, "v=1", "port="}},
		{"pool dot", ok("pool=a.b")},
		{"pool space", ok("pool=a b")},
		{"pool unicode", ok("pool=läb")},
		{"pool too long", ok("pool=" + strings.Repeat("p", 65))},
		{"entry too long", ok("x=" + strings.Repeat("y", 254))},
		{"too many entries", ok(strings.Split(strings.Repeat("x=1,", 14), ",")...)},
		{"invalid utf8 pool", ok("pool=\xff")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTXT(tt.in)
			if !errors.Is(err, ErrInvalidTXT) {
				t.Errorf("ParseTXT(%q) = %+v, %v; want %v", tt.in, got, err, ErrInvalidTXT)
			}
		})
	}
}

func TestTXTEncodeRejectsInvalid(t *testing.T) {
	tests := []TXT{
		{},
		{ID: testID, APIVersion: 1},
		{ID: testID, Port: 1},
		{ID: "x", APIVersion: 1, Port: 1},
		{ID: testID, APIVersion: 1, Port: 1, Pool: "a=b"},
	}
	for _, txt := range tests {
		if recs, err := txt.Encode(); !errors.Is(err, ErrInvalidTXT) {
			t.Errorf("%+v.Encode() = %q, %v; want %v", txt, recs, err, ErrInvalidTXT)
		}
	}
}

// FuzzParseTXT feeds ParseTXT entries split at NUL bytes. Whatever it
// accepts must encode back and parse to the same TXT.
func FuzzParseTXT(f *testing.F) {
	f.Add("id=" + testID + "\x00v=1\x00port=4242")
	f.Add("id=" + testID + "\x00v=9999\x00port=65535\x00pool=lab-1\x00x=y")
	f.Add("v=01\x00port=-1\x00=\x00")
	f.Add("pool=\xff\x00id=\x00")
	f.Fuzz(func(t *testing.T, in string) {
		recs := strings.Split(in, "\x00")
		txt, err := ParseTXT(recs)
		if err != nil {
			if !errors.Is(err, ErrInvalidTXT) {
				t.Fatalf("ParseTXT(%q) error %v does not wrap ErrInvalidTXT", recs, err)
			}
			return
		}
		enc, err := txt.Encode()
		if err != nil {
			t.Fatalf("ParseTXT(%q) accepted %+v that does not encode: %v", recs, txt, err)
		}
		again, err := ParseTXT(enc)
		if err != nil || again != txt {
			t.Fatalf("round trip of %+v: got %+v, %v", txt, again, err)
		}
	})
}
