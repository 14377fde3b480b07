package main

import (
	"slices"
	"testing"
)

func TestBrowserCommand(t *testing.T) {
	const url = "http://127.0.0.1:40123/#door=a&b=^c"
	for _, tc := range []struct {
		goos string
		want []string
	}{
		{"darwin", []string{"open", url}},
		{"windows", []string{"rundll32", "url.dll,FileProtocolHandler", url}},
		{"linux", []string{"xdg-open", url}},
	} {
		if got := browserCommand(tc.goos, url).Args; !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.goos, got, tc.want)
		}
	}
}

// TestURLOpener: the first line RunWebTo prints is opened, once, however
// the writes split it.
func TestURLOpener(t *testing.T) {
	var opened []string
	u := &urlOpener{open: func(s string) { opened = append(opened, s) }}
	for _, w := range []string{"http://127.0.0.1:1/", "#door=x\n", "http://other\n"} {
		u.Write([]byte(w))
	}
	if !slices.Equal(opened, []string{"http://127.0.0.1:1/#door=x"}) {
		t.Errorf("opened %q", opened)
	}
}
