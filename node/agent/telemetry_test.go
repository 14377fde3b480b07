//go:build linux && cgo

package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/labpool/labpool/internal/leaktest"
	"github.com/labpool/labpool/node/gpu"
	"github.com/labpool/labpool/node/gpu/gputest"
	"github.com/labpool/labpool/node/host"
)

// fakeHost is a HostSource whose CPU reads as the number of samples taken.
type fakeHost struct {
	mu    sync.Mutex
	calls int
}

func (h *fakeHost) Info(context.Context) (host.Info, error) {
	return host.Info{Hostname: "lab1", OS: "linux", Cores: 64, MemTotalBytes: 512 << 30}, nil
}

func (h *fakeHost) Sample(context.Context) (host.Stats, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	return host.Stats{CPUPercent: float64(h.calls), MemTotalBytes: 512 << 30, Disks: []host.Disk{}}, nil
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newTelemetry returns a Telemetry over n fake GPUs (none: no GPUSource).
func newTelemetry(t testing.TB, n int) (*Telemetry, *gputest.Library) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ID, cfg.Name, cfg.Version = "K7Q2-MX4P", "lab1", "v1.2.3"
	if n == 0 {
		return New(cfg, nil, &fakeHost{}, discard()), nil
	}
	lib := gputest.NewLibrary(n)
	g, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return New(cfg, g, &fakeHost{}, discard()), lib
}

// start runs tel until the returned func is called, which waits for Run.
func start(t *testing.T, tel *Telemetry) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tel.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v", err)
		}
	}
}

func receive(t *testing.T, ch <-chan Sample) []Sample {
	t.Helper()
	var got []Sample
	for {
		select {
		case s, ok := <-ch:
			if !ok {
				return got
			}
			got = append(got, s)
		default:
			return got
		}
	}
}

func TestRunFansOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel, _ := newTelemetry(t, 2)
		a, _ := tel.Subscribe()
		b, cancelB := tel.Subscribe()
		t0 := time.Now()
		stop := start(t, tel)
		var gotA []Sample
		for range 3 {
			synctest.Wait()
			gotA = append(gotA, receive(t, a)...)
			time.Sleep(time.Second)
		}
		synctest.Wait()
		gotA = append(gotA, receive(t, a)...)
		cancelB()
		cancelB() // idempotent
		stop()    // synctest fails the test if a goroutine of Run is left

		if len(gotA) != 4 { // at 0, 1, 2 and 3 s
			t.Fatalf("subscriber got %d samples in 3 s; want 4", len(gotA))
		}
		for i, s := range gotA {
			if want := t0.Add(time.Duration(i) * time.Second); !s.Time.Equal(want) || len(s.GPUs) != 2 ||
				s.Host.CPUPercent != float64(i+1) || s.GPUError != "" {
				t.Errorf("sample %d = %+v; want time %v, 2 GPUs, cpu %d", i, s, want, i+1)
			}
		}
		if got := receive(t, b); len(got) != 4 {
			t.Errorf("cancelled subscriber drained %d samples; want 4 before it was closed", len(got))
		}
		if _, ok := <-a; ok {
			t.Error("subscriber channel open after Run returned")
		}
		latest, ok := tel.Latest()
		if !ok || !latest.Time.Equal(gotA[3].Time) {
			t.Errorf("Latest() = %v, %v; want the last sample", latest.Time, ok)
		}
	})
}

func TestSlowSubscriber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel, _ := newTelemetry(t, 1)
		slow, _ := tel.Subscribe()
		fast, _ := tel.Subscribe()
		stop := start(t, tel)
		var n int
		for range 10 {
			synctest.Wait()
			n += len(receive(t, fast))
			time.Sleep(time.Second)
		}
		synctest.Wait()
		n += len(receive(t, fast))
		stop()
		if n != 11 {
			t.Errorf("fast subscriber got %d samples; want 11", n)
		}
		got := receive(t, slow)
		if len(got) != DefaultConfig().Buffer || got[0].Host.CPUPercent != 1 {
			t.Errorf("slow subscriber kept %d samples starting with cpu %v; want the first %d",
				len(got), got[0].Host.CPUPercent, DefaultConfig().Buffer)
		}
	})
}

func TestRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel, _ := newTelemetry(t, 0)
		stop := start(t, tel)
		synctest.Wait()
		if err := tel.Run(t.Context()); err == nil {
			t.Error("second Run() = nil while the first runs")
		}
		stop()
		if err := tel.Run(t.Context()); err == nil {
			t.Error("Run() after Run returned = nil")
		}
		ch, cancel := tel.Subscribe()
		defer cancel()
		if _, ok := <-ch; ok {
			t.Error("Subscribe after Run returned gave an open channel")
		}
	})
}

func TestNoGPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, gpus := range []GPUSource{nil, (*gpu.Sampler)(nil)} {
			tel := New(DefaultConfig(), gpus, &fakeHost{}, discard())
			stop := start(t, tel)
			synctest.Wait()
			stop()
			s, _ := tel.Latest()
			info := tel.Info()
			want := gpu.ErrNoDriver.Error()
			if s.GPUError != want || s.GPUs == nil || len(s.GPUs) != 0 || info.GPUError != want || info.GPUs == nil {
				t.Errorf("with GPUSource %#v: sample %+v, info %+v; want no GPU and %q", gpus, s, info, want)
			}
		}
	})
}

func TestGPUHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel, lib := newTelemetry(t, 2)
		ch, _ := tel.Subscribe()
		hang := make(chan struct{})
		lib.Devices[1].Hang = hang
		stop := start(t, tel)
		// The first sample gives up on the hung call at its deadline (1 s),
		// the second waits behind it, the third gets the GPUs once the
		// driver returns (at 2.5 s).
		time.Sleep(2500 * time.Millisecond)
		got := receive(t, ch)
		close(hang)
		time.Sleep(time.Second)
		synctest.Wait()
		got = append(got, receive(t, ch)...)
		stop()

		if len(got) != 4 {
			t.Fatalf("got %d samples in 3.5 s with a GPU hung for 2.5 s; want 4 (one per second)", len(got))
		}
		for i, want := range []string{"deadline exceeded", "stuck", "", ""} {
			if s := got[i]; !strings.Contains(s.GPUError, want) || (want == "") != (len(s.GPUs) == 2) ||
				s.Host.CPUPercent != float64(i+1) {
				t.Errorf("sample %d: GPUError %q, %d GPUs, cpu %v; want %q", i, s.GPUError, len(s.GPUs), s.Host.CPUPercent, want)
			}
		}
	})
}

func TestInfo(t *testing.T) {
	tel, _ := newTelemetry(t, 2)
	info := tel.Info()
	want := Info{
		ID: "K7Q2-MX4P", Name: "lab1", Version: "v1.2.3", StartedAt: info.StartedAt,
		Host: host.Info{Hostname: "lab1", OS: "linux", Cores: 64, MemTotalBytes: 512 << 30},
		GPUs: []gpu.Info{
			{Index: 0, UUID: gputest.NewDevice(0).UUID, Name: "NVIDIA H100 80GB HBM3", MemTotalBytes: 80 << 30, PowerLimitW: 700},
			{Index: 1, UUID: gputest.NewDevice(1).UUID, Name: "NVIDIA H100 80GB HBM3", MemTotalBytes: 80 << 30, PowerLimitW: 700},
		},
	}
	if diff := cmp.Diff(want, info); diff != "" || time.Since(info.StartedAt) > time.Minute {
		t.Errorf("Info() (-want +got):\n%s", diff)
	}
	info.GPUs[0].Name = "changed"
	if tel.Info().GPUs[0].Name == "changed" {
		t.Error("Info() shares its GPUs with the caller")
	}
}

// TestRunRealHostNoLeak runs the real host sampler on real time and checks
// that Run leaves no goroutine behind.
func TestRunRealHostNoLeak(t *testing.T) {
	before := leaktest.Count()
	cfg := DefaultConfig()
	cfg.Interval = 10 * time.Millisecond
	tel := New(cfg, nil, host.NewSampler(host.DefaultConfig()), discard())
	ch, _ := tel.Subscribe()
	stop := start(t, tel)
	s := <-ch
	stop()
	if s.Host.MemTotalBytes == 0 || s.GPUError == "" {
		t.Errorf("sample = %+v", s)
	}
	leaktest.Check(t, before, 5*time.Second)
}

// TestInfoFollowsGPUChanges: a GPU that appears while the agent runs is in
// Info (which the node record publishes) within a minute, and
// DevicesChanged hears of it once, with every GPU.
func TestInfoFollowsGPUChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		var mu sync.Mutex
		var told [][]gpu.Info
		cfg.DevicesChanged = func(devs []gpu.Info) {
			mu.Lock()
			told = append(told, devs)
			mu.Unlock()
		}
		lib := gputest.NewLibrary(2)
		g, err := gpu.OpenLibrary(lib, gpu.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		tel := New(cfg, g, &fakeHost{}, discard())
		stop := start(t, tel)
		defer stop()
		synctest.Wait()
		lib.Mu.Lock()
		lib.Devices = append(lib.Devices, gputest.NewDevice(2))
		lib.Mu.Unlock()
		time.Sleep(90 * time.Second)
		synctest.Wait()
		if n := len(tel.Info().GPUs); n != 3 {
			t.Errorf("Info lists %d GPUs a minute after a third appeared; want 3", n)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(told) != 1 || len(told[0]) != 3 {
			t.Errorf("DevicesChanged heard %d times; want once, with 3 GPUs", len(told))
		}
	})
}

// urgencyLog is a fake of procs.Urgent and procs.UrgentFor that notes
// what a Telemetry marks urgent, and a HostSource that notes whether a
// claim is held while it is read.
type urgencyLog struct {
	fakeHost
	mu     sync.Mutex
	held   int
	events []string
}

func (u *urgencyLog) note(e string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.events = append(u.events, e)
}

func (u *urgencyLog) urgent() func() {
	u.mu.Lock()
	u.held++
	u.mu.Unlock()
	u.note("claim")
	return func() {
		u.mu.Lock()
		u.held--
		u.mu.Unlock()
		u.note("release")
	}
}

func (u *urgencyLog) urgentFor(d time.Duration) { u.note("urgent for " + d.String()) }

func (u *urgencyLog) Sample(ctx context.Context) (host.Stats, error) {
	u.mu.Lock()
	held := u.held
	u.mu.Unlock()
	u.note(fmt.Sprintf("sample, %d claim held", held))
	return u.fakeHost.Sample(ctx)
}

// TestSampleIsUrgent: a sample is urgent work while it is taken, and for
// sampleUrgency after it is published (its subscribers record and send
// it), so that a copy steps aside for it (procs.Yield).
func TestSampleIsUrgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := &urgencyLog{}
		tel := New(DefaultConfig(), nil, u, discard())
		tel.urgent, tel.urgentFor = u.urgent, u.urgentFor
		ch, cancel := tel.Subscribe()
		defer cancel()
		stop := start(t, tel)
		synctest.Wait()
		if got := receive(t, ch); len(got) != 1 {
			t.Fatalf("got %d samples, want 1", len(got))
		}
		stop()
		want := []string{"claim", "sample, 1 claim held", "release", "urgent for " + sampleUrgency.String()}
		if diff := cmp.Diff(want, u.events); diff != "" {
			t.Errorf("urgency of one sample (-want +got):\n%s", diff)
		}
	})
}
