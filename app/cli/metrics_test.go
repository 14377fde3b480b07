package cli

import (
	"context"
	"strings"
	"testing"
)

func TestAgentMetricsFlags(t *testing.T) {
	dir := t.TempDir()
	var got DaemonOptions
	hooks := Hooks{Agent: func(_ context.Context, o DaemonOptions) error { got = o; return nil }}
	if code, _, stderr := run(t, hooks, "--data", dir, "agent", "--metrics", "127.0.0.1:9400"); code != ExitOK || got.Metrics != "127.0.0.1:9400" || got.MetricsAllowRemote {
		t.Errorf("agent --metrics 127.0.0.1:9400: exit %d (%s), options %+v", code, stderr, got)
	}
	got = DaemonOptions{}
	code, _, stderr := run(t, hooks, "--data", dir, "agent", "--metrics", "0.0.0.0:9400")
	if code != ExitUsage || got.DataDir != "" || !strings.Contains(stderr, "metrics_loopback_only") || !strings.Contains(stderr, "--metrics-allow-remote") {
		t.Errorf("agent --metrics 0.0.0.0:9400: exit %d, stderr %q, started %v; want a usage error naming the rule, no agent", code, stderr, got.DataDir != "")
	}
	if code, _, stderr := run(t, hooks, "--data", dir, "agent", "--metrics", "0.0.0.0:9400", "--metrics-allow-remote"); code != ExitOK || !got.MetricsAllowRemote {
		t.Errorf("agent --metrics 0.0.0.0:9400 --metrics-allow-remote: exit %d (%s), options %+v", code, stderr, got)
	}
	if code, _, _ := run(t, hooks, "--data", dir, "agent", "--metrics-allow-remote"); code != ExitUsage {
		t.Errorf("--metrics-allow-remote alone: exit %d, want %d", code, ExitUsage)
	}
}
