package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/history"
	"github.com/labpool/labpool/node/agent"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/host"
)

// recordHistory records 5 samples of this machine, a second apart, ending a
// second before the one writeReplica leaves (in the previous version's
// JSON, at now): CPU 10, 20, ... 50%, GPU 1 at 100% in the third.
func recordHistory(t *testing.T, dataDir string) time.Time {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	db := writeReplicaAt(t, dataDir, now) // one clock reading: a second may turn between two
	r := history.NewRecorder(db, selfID, slog.New(slog.DiscardHandler))
	start := now.Add(-5 * time.Second)
	for i := range 5 {
		s := agent.Sample{Time: start.Add(time.Duration(i) * time.Second), Host: host.Stats{CPUPercent: float64(10 * (i + 1)),
			MemUsedBytes: 3 << 30, MemTotalBytes: 16 << 30, NetRxBps: 2048}}
		for g := range 2 {
			s.GPUs = append(s.GPUs, gpu.Stats{Index: g, UtilPercent: 5, MemUsedBytes: 1 << 30, TempC: 60, PowerW: 200,
				SMClockMHz: 1980, MemClockMHz: 2619})
		}
		if i == 2 {
			s.GPUs[1].UtilPercent = 100
		}
		if err := r.Record(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	return start
}

func TestHistoryCommand(t *testing.T) {
	dir := t.TempDir()
	start := recordHistory(t, dir)
	hooks := Hooks{}

	code, out, errOut := run(t, hooks, "--data", dir, "history", "self", "--gpu", "1", "--since", "1m", "--json")
	if code != ExitOK {
		t.Fatalf("history --json: exit %d: %s", code, errOut)
	}
	var s app.Series
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("history --json printed %q: %v", out, err)
	}
	if s.Node != selfID || s.GPU == nil || *s.GPU != 1 || s.Tier != "1s" || len(s.Times) != 6 || s.Times[0] != start.Unix() {
		t.Fatalf("history --json = %+v", s)
	}
	if util := s.Metrics[0]; util.Name != "util_percent" || util.Max[2] != 100 || util.Mean[1] != 5 || util.Mean[5] != 75 {
		t.Errorf("GPU 1 utilization = %+v", util)
	}
	if !strings.Contains(errOut, "no daemon is running") {
		t.Errorf("stderr %q does not say the replica may be stale", errOut)
	}

	code, out, _ = run(t, hooks, "--data", dir, "history", "self", "--since", "90s", "--csv")
	if code != ExitOK {
		t.Fatalf("history --csv: exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "time,cpu_percent_min,cpu_percent_mean,cpu_percent_max,mem_used_bytes_min") {
		t.Fatalf("history --csv printed:\n%s", out)
	}
	if want := start.UTC().Format(time.RFC3339) + ",10,10,10,3.221225472e+09,"; !strings.HasPrefix(lines[1], want) {
		t.Errorf("first CSV row %q, want it to start %q", lines[1], want)
	}

	code, out, _ = run(t, hooks, "--data", dir, "history", "self", "--gpu", "1")
	if code != ExitOK {
		t.Fatalf("history: exit %d", code)
	}
	if !strings.Contains(out, "UTIL %") || !strings.Contains(out, "TEMP °C") || !strings.Contains(out, "6 points of 1s") ||
		!strings.Contains(out, "100.0") || !strings.Contains(out, "1.0 GiB") || !strings.Contains(out, "1980") {
		t.Errorf("history table:\n%s", out)
	}

	for _, args := range [][]string{
		{"history"}, {"history", "self", "--since", "soon"}, {"history", "self", "--json", "--csv"}, {"history", "self", "--since", "0s"},
	} {
		if code, _, _ := run(t, hooks, append([]string{"--data", dir}, args...)...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
	if code, _, errOut := run(t, hooks, "--data", dir, "history", "nobody"); code != ExitFailure || !strings.Contains(errOut, `no machine "nobody"`) {
		t.Errorf("history of an unknown machine: exit %d, %q", code, errOut)
	}
}

// TestHistoryCommandDaemon: through the daemon the series is the one the
// replica gives.
func TestHistoryCommandDaemon(t *testing.T) {
	dir := t.TempDir()
	start := recordHistory(t, dir)
	_, offline, _ := run(t, Hooks{}, "--data", dir, "history", "self", "--gpu", "0", "--json")
	// The daemon's replica as recordHistory left it: a new clock reading
	// could write a sample in the next second.
	startDaemonAt(t, dir, &fakePool{}, start.Add(5*time.Second))
	code, online, errOut := run(t, Hooks{}, "--data", dir, "history", "self", "--gpu", "0", "--json")
	if code != ExitOK || strings.Contains(errOut, "no daemon") {
		t.Fatalf("history through the daemon: exit %d, %s", code, errOut)
	}
	if diff := cmp.Diff(offline, online); diff != "" {
		t.Errorf("the daemon's series differs from the replica's (-replica +daemon):\n%s", diff)
	}
}

func TestWriteSeries(t *testing.T) {
	s := app.Series{Tier: "15m", StepSeconds: 900, Times: []int64{1_700_000_100},
		Metrics: []app.Metric{
			{Name: "util_percent", Unit: "%", Min: []float64{0}, Mean: []float64{12.34}, Max: []float64{100}},
			{Name: "mem_used_bytes", Unit: "B", Min: []float64{1 << 30}, Mean: []float64{1 << 30}, Max: []float64{1 << 30}},
			{Name: "net_rx_bps", Unit: "B/s", Min: []float64{0}, Mean: []float64{1536}, Max: []float64{2048}},
		}}
	var b bytes.Buffer
	if err := writeSeries(&b, s); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("table:\n%s", b.String())
	}
	row := strings.Fields(lines[1])
	if diff := cmp.Diff([]string{"0.0/12.3/100.0", "1.0", "GiB", "0", "B/s/1.5", "KiB/s/2.0", "KiB/s"}, row[2:]); diff != "" {
		t.Errorf("row %q (-want +got):\n%s", lines[1], diff)
	}
	if lines[2] != "1 point of 15m (min/mean/max over each)" {
		t.Errorf("footer %q", lines[2])
	}
	b.Reset()
	if err := writeSeries(&b, app.Series{}); err != nil || b.String() != "no history in this window\n" {
		t.Errorf("empty series: %q, %v", b.String(), err)
	}
}

func TestParseSince(t *testing.T) {
	for in, want := range map[string]time.Duration{"90s": 90 * time.Second, "2h": 2 * time.Hour, "7d": 7 * 24 * time.Hour,
		"1y": 365 * 24 * time.Hour, "1.5d": 36 * time.Hour} {
		if got, err := parseSince(in); err != nil || got != want {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "-1d", "1ms", "soon", "0y"} {
		if _, err := parseSince(in); err == nil {
			t.Errorf("parseSince(%q) succeeded", in)
		}
	}
}
