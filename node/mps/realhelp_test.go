package mps

import (
	"fmt"
	"log/slog"
	"testing"
)

func fmtSscan(s string, v any) (int, error) { return fmt.Sscan(s, v) }

// testLogger logs to t.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
