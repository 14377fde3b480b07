package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
)

func TestBytes(t *testing.T) {
	tests := []struct {
		in   uint64
		want string
	}{
		{0, "0 B"},
		{1, "1 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{1<<20 - 1<<10, "1023.0 KiB"},
		{1 << 20, "1.0 MiB"},
		{3 << 30, "3.0 GiB"},
		{80 << 30, "80.0 GiB"},
		{1 << 40, "1.0 TiB"},
		{5 << 50, "5.0 PiB"},
		{1 << 60, "1.0 EiB"},
		{1<<64 - 1, "16.0 EiB"},
	}
	for _, tt := range tests {
		if got := Bytes(tt.in); got != tt.want {
			t.Errorf("Bytes(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		ago  time.Duration
		want string
	}{
		{0, "now"},
		{-5 * time.Second, "now"}, // a peer's clock ahead of ours
		{1999 * time.Millisecond, "now"},
		{2 * time.Second, "2s ago"},
		{59 * time.Second, "59s ago"},
		{time.Minute, "1m ago"},
		{59*time.Minute + 59*time.Second, "59m ago"},
		{time.Hour, "1h ago"},
		{47 * time.Hour, "47h ago"},
		{48 * time.Hour, "2d ago"},
		{400 * 24 * time.Hour, "400d ago"},
	}
	for _, tt := range tests {
		if got := Ago(now.Add(-tt.ago), now); got != tt.want {
			t.Errorf("Ago(now - %v) = %q, want %q", tt.ago, got, tt.want)
		}
	}
	if got := Ago(time.Time{}, now); got != "never" {
		t.Errorf("Ago(zero) = %q, want never", got)
	}
}

func TestBar(t *testing.T) {
	tests := []struct {
		pct  float64
		want string
	}{
		{0, "░░░░"},
		{50, "██░░"},
		{99, "███░"},
		{100, "████"},
		{150, "████"},
		{-3, "░░░░"},
	}
	for _, tt := range tests {
		if got := bar(tt.pct, 4); got != tt.want {
			t.Errorf("bar(%v, 4) = %q, want %q", tt.pct, got, tt.want)
		}
	}
}

// watchNodes are the nodes of a watch frame: this machine with a GPU, a
// peer online with no GPU, and one offline whose GPUs failed.
func watchNodes(now time.Time) []app.Node {
	host := &app.HostStats{CPUPercent: 50, Load1: 1.5, MemUsedBytes: 4 << 30, MemTotalBytes: 16 << 30}
	return []app.Node{
		{ID: "SELF-AAAA-AAAA", ShortID: "SELF-AAAA", Name: "rig-one", Self: true, Online: true, LastSeen: now, Host: host,
			GPUs: []app.GPU{{Index: 0, Name: "NVIDIA H100", UtilPercent: 87, MemUsedBytes: 40 << 30, MemTotalBytes: 80 << 30, TempC: 66, PowerW: 412, PowerLimitW: 700,
				Health: "ok", Job: "7e82623a8db42109", JobName: "train-bert", JobOwnerName: "alice"},
				{Index: 1, Name: "NVIDIA H100", Health: "warning", HealthReason: "throttled: hw_thermal_slowdown"}}},
		{ID: "PEER-BBBB-BBBB", ShortID: "PEER-BBBB", Name: "rig-two", Online: true, LastSeen: now, Host: host, GPUs: []app.GPU{}},
		{ID: "DOWN-CCCC-CCCC", ShortID: "DOWN-CCCC", Name: "rig-three", Stale: true, LastSeen: now.Add(-2 * time.Hour), Host: host,
			GPUs: []app.GPU{}, GPUError: "nvml: driver/library version mismatch"},
	}
}

func TestRenderWatch(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	out := renderWatch(watchNodes(now), now, 100)
	sections := strings.Split(out, "\n\n")
	if len(sections) < 4 {
		t.Fatalf("frame:\n%s\nwant a title and a section per node", out)
	}
	if !strings.Contains(sections[0], "3 machines") {
		t.Errorf("title %q, want the count of machines", sections[0])
	}
	tests := []struct {
		node    string
		want    []string
		notWant []string
	}{
		{"rig-one", []string{"SELF-AAAA", "this machine", "CPU", "50.0%", "4.0 GiB/16.0 GiB", "load 1.50",
			"GPU0", "87.0%", "40.0 GiB/80.0 GiB", "66°C", "412/700 W", "NVIDIA H100", "ok", "job train-bert (alice)",
			"GPU1", "warning: throttled: hw_thermal_slowdown", "free"}, []string{"offline", "no GPUs", "7e82623a"}},
		{"rig-two", []string{"online", "no GPUs"}, []string{"offline", "GPU0"}},
		{"rig-three", []string{"offline", "last seen 2h ago", "stale", "nvml: driver/library version mismatch"}, []string{"● online", "no GPUs"}},
	}
	for i, tt := range tests {
		sec := sections[i+1]
		if !strings.Contains(sec, tt.node) {
			t.Errorf("section %d is not %s's:\n%s", i+1, tt.node, sec)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(sec, w) {
				t.Errorf("%s lacks %q:\n%s", tt.node, w, sec)
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(sec, w) {
				t.Errorf("%s shows %q:\n%s", tt.node, w, sec)
			}
		}
	}
}

func TestRenderWatchEmpty(t *testing.T) {
	out := renderWatch(nil, time.Now(), 0)
	if !strings.Contains(out, "0 machines") {
		t.Errorf("empty frame %q", out)
	}
}

// fakeReader is a reader of fixed nodes.
type fakeReader struct {
	nodes []app.Node
	err   error
	calls int
}

func (f *fakeReader) Nodes(context.Context) ([]app.Node, error) { f.calls++; return f.nodes, f.err }
func (f *fakeReader) GPUs(context.Context) ([]app.GPU, error)   { return nil, f.err }
func (f *fakeReader) Pool(context.Context) (app.PoolStatus, error) {
	return app.PoolStatus{}, f.err
}
func (f *fakeReader) Jobs(context.Context, bool) ([]app.Job, error) { return nil, f.err }
func (f *fakeReader) Folders(context.Context) ([]app.Folder, error) { return nil, f.err }

func TestWatchPlain(t *testing.T) {
	r := &fakeReader{nodes: watchNodes(time.Now())}
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- watchPlain(ctx, &out, r, 5*time.Millisecond) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watchPlain: %v", err)
	}
	frames := strings.Count(out.String(), "\x1b[H\x1b[2J")
	if frames < 2 || frames != r.calls || !strings.Contains(out.String(), "rig-three") {
		t.Errorf("%d frames from %d reads, want a frame per read and more than one", frames, r.calls)
	}

	r.err = errors.New("replica gone")
	if err := watchPlain(context.Background(), &out, r, time.Millisecond); !errors.Is(err, r.err) {
		t.Errorf("watchPlain with a failing reader: %v", err)
	}
}

func TestWriteNodes(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	nodes := watchNodes(now)
	nodes = append(nodes, app.Node{Name: "blank", ShortID: "BLNK-0000", GPUs: []app.GPU{}})
	nodes[0].Info.GOOS, nodes[0].Info.Arch = "linux", "amd64"
	nodes[1].Info.GOOS, nodes[1].Info.Arch = "darwin", "arm64"
	var out bytes.Buffer
	if err := writeNodes(&out, nodes, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"NAME", "ID", "STATE", "OS", "CPU", "MEMORY", "GPUS", "LAST SEEN"},
		{"rig-one", "this machine", "linux/amd64", "50%", "4.0 GiB/16.0 GiB", "1", "now"},
		{"rig-two", "online", "macOS/arm64", "0", "now"},
		{"rig-three", "offline", "0 (nvml: driver/library version mismatch)", "2h ago"},
		{"blank", "offline", "-", "never"},
	}
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s\nwant %d lines", out.String(), len(want))
	}
	for i, ws := range want {
		for _, w := range ws {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %q lacks %q", lines[i], w)
			}
		}
	}
}
