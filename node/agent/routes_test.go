//go:build linux && cgo

package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/node/peerapi"
	"github.com/labpool/labpool/node/peerapi/peerapitest"
)

// TestRoundTripEveryRoute calls every route of Routes through Client and
// the real handler, and wants what the telemetry itself holds.
func TestRoundTripEveryRoute(t *testing.T) {
	tel, _ := newTelemetry(t, 2)
	l := &peerapitest.Loopback{Handler: Handler(tel)}
	peerapitest.RoundTrip(t, Routes, l, map[string]func(*testing.T, peerapi.Conn){
		"GET /v1/node/info": func(t *testing.T, c peerapi.Conn) {
			got, err := Client{c}.Info(t.Context())
			if diff := cmp.Diff(tel.Info(), got); err != nil || diff != "" {
				t.Errorf("Info: %v (-want +got):\n%s", err, diff)
			}
		},
		"GET /v1/node/sample": func(t *testing.T, c peerapi.Conn) {
			if _, err := (Client{c}).Sample(t.Context()); err == nil {
				t.Error("Sample before the first: no refusal")
			}
			tel.tick(t.Context())
			want, _ := tel.Latest()
			got, err := Client{c}.Sample(t.Context())
			if diff := cmp.Diff(want, got); err != nil || diff != "" {
				t.Errorf("Sample: %v (-want +got):\n%s", err, diff)
			}
		},
	})
}
