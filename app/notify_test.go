package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeNotifier records notifications.
type fakeNotifier struct {
	mu  sync.Mutex
	got []Notification
}

func (f *fakeNotifier) Notify(_ context.Context, n Notification) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, n)
	return nil
}

func (f *fakeNotifier) all() []Notification {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func TestAlertNotifier(t *testing.T) {
	fn := &fakeNotifier{}
	an := NewAlertNotifier(fn, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	names := map[string]string{selfID: "zeta"}
	old := Alert{ID: "old", Node: selfID, Rule: "gpu-temp", Severity: "critical", Message: "GPU 0 at 90 °C", FiredAt: t0}
	an.Update(ctx, []Alert{old}, names)
	if n := fn.all(); len(n) != 0 {
		t.Fatalf("alerts there when the window opened were notified: %+v", n)
	}
	now := t0.Add(time.Minute)
	hot := Alert{ID: "hot", Node: selfID, Rule: "gpu-temp", Severity: "critical", Message: "GPU 1 at 91 °C", FiredAt: now}
	idle := Alert{ID: "idle", Node: alphaID, Rule: "gpu-idle-allocation", Severity: "warning", Message: "idle allocation: ...", FiredAt: now}
	muted := Alert{ID: "muted", Node: selfID, Rule: "gpu-throttle", Severity: "warning", FiredAt: now, Muted: true}
	gone := Alert{ID: "gone", Node: selfID, Rule: "gpu-temp", Severity: "critical", FiredAt: now, ClearedAt: &now}
	an.Update(ctx, []Alert{hot, idle, muted, gone, old}, names)
	an.Update(ctx, []Alert{hot, idle}, names) // again: nothing new
	want := []Notification{
		{Summary: "gpu-temp on zeta", Body: "GPU 1 at 91 °C", Critical: true},
		{Summary: "gpu-idle-allocation on ALFA-BBBB", Body: "idle allocation: ..."},
	}
	if d := cmp.Diff(want, fn.all()); d != "" {
		t.Errorf("notifications (-want +got):\n%s", d)
	}
}

func TestGDBusNotifierArgs(t *testing.T) {
	var got []string
	g := GDBusNotifier{Run: func(_ context.Context, name string, args ...string) error {
		got = append([]string{name}, args...)
		return nil
	}}
	if err := g.Notify(context.Background(), Notification{Summary: "gpu-temp on bob's box", Body: `a \ <b>&`, Critical: true}); err != nil {
		t.Fatal(err)
	}
	want := []string{"gdbus", "call", "--session", "--dest", "org.freedesktop.Notifications",
		"--object-path", "/org/freedesktop/Notifications", "--method", "org.freedesktop.Notifications.Notify", "--",
		"'labpool'", "0", "'labpool'", `'gpu-temp on bob\'s box'`, `'a \\ &lt;b&gt;&amp;'`, "@as []", "{'urgency': <byte 2>}", "-1"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("gdbus call (-want +got):\n%s", d)
	}
}

func TestSessionBusAbsent(t *testing.T) {
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if SessionBus() {
		t.Errorf("SessionBus() with no address and no bus socket = true")
	}
}

// fakeSource is a daemon whose alerts change once: the events stream
// sends the new list, then ends with ctx.
type fakeSource struct {
	first, then []Alert
}

func (f fakeSource) Alerts(context.Context, int) ([]Alert, error) { return f.first, nil }
func (f fakeSource) Nodes(context.Context) ([]Node, error) {
	return []Node{{ID: selfID, Name: "zeta"}}, nil
}
func (f fakeSource) Events(ctx context.Context, fn func(string, json.RawMessage)) error {
	b, _ := json.Marshal(f.then)
	fn(EventNodes, json.RawMessage(`[]`))
	fn(EventAlerts, b)
	<-ctx.Done()
	return ctx.Err()
}

func TestRunAlertNotifications(t *testing.T) {
	old := Alert{ID: "old", Node: selfID, Rule: "gpu-temp", Severity: "critical", FiredAt: t0}
	hot := Alert{ID: "hot", Node: selfID, Rule: "gpu-temp", Severity: "critical", Message: "GPU 0 at 95 °C", FiredAt: t0}
	fn := &fakeNotifier{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		RunAlertNotifications(ctx, fakeSource{first: []Alert{old}, then: []Alert{hot, old}}, fn, slog.New(slog.DiscardHandler))
		close(done)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(fn.all()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	want := []Notification{{Summary: "gpu-temp on zeta", Body: "GPU 0 at 95 °C", Critical: true}}
	if d := cmp.Diff(want, fn.all()); d != "" {
		t.Errorf("notifications (-want +got):\n%s", d)
	}
}

func TestAlertNotifierOncePerIncident(t *testing.T) {
	fn := &fakeNotifier{}
	an := NewAlertNotifier(fn, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	names := map[string]string{selfID: "zeta", alphaID: "alpha"}
	an.Update(ctx, nil, names)
	now := t0.Add(time.Minute)
	gpu := func(i int) *int { return &i }
	// One hot GPU as an older agent records it (three alerts), an idle job
	// on two GPUs (two alerts), one machine seen offline by two observers.
	hot := []Alert{
		{ID: "t", Node: selfID, Rule: "gpu-temp", Severity: "critical", GPU: gpu(0), Message: "GPU 0 at 91 °C", FiredAt: now},
		{ID: "th", Node: selfID, Rule: "gpu-throttle", Severity: "warning", GPU: gpu(0), FiredAt: now},
		{ID: "h", Node: selfID, Rule: "gpu-health", Severity: "warning", GPU: gpu(0), FiredAt: now},
	}
	idle := []Alert{
		{ID: "i0", Node: alphaID, Rule: "gpu-idle-allocation", Severity: "warning", GPU: gpu(0), Job: "j1", Message: "idle", FiredAt: now},
		{ID: "i1", Node: alphaID, Rule: "gpu-idle-allocation", Severity: "warning", GPU: gpu(1), Job: "j1", Message: "idle", FiredAt: now},
	}
	off := []Alert{
		{ID: "o1", Node: "GONE-CCCC", Rule: "machine-offline", Severity: "warning", Observer: selfID, Message: "machine gone offline", FiredAt: now},
		{ID: "o2", Node: "GONE-CCCC", Rule: "machine-offline", Severity: "warning", Observer: alphaID, Message: "machine gone offline", FiredAt: now},
	}
	all := append(append(append([]Alert{}, hot...), idle...), off...)
	an.Update(ctx, all, names)
	an.Update(ctx, all, names)
	if n := fn.all(); len(n) != 3 {
		t.Fatalf("notifications: %+v; want 3, one per incident", n)
	}
	// The hot GPU's incident ends; a new one on the same GPU is news.
	an.Update(ctx, append(append([]Alert{}, idle...), off...), names)
	again := Alert{ID: "t2", Node: selfID, Rule: "gpu-temp", Severity: "critical", GPU: gpu(0), Message: "GPU 0 at 92 °C", FiredAt: now.Add(time.Hour)}
	an.Update(ctx, append([]Alert{again}, idle...), names)
	n := fn.all()
	if len(n) != 4 || n[3].Body != "GPU 0 at 92 °C" {
		t.Errorf("notifications: %+v; want a fourth for the GPU's new incident", n)
	}
}

// An incident whose severity changes is notified once for the change: it
// falls to warning when its worst condition ends, rises again, and each
// is told once, never repeated while nothing changes.
func TestAlertNotifierOncePerChangeOfSeverity(t *testing.T) {
	fn := &fakeNotifier{}
	an := NewAlertNotifier(fn, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	names := map[string]string{selfID: "zeta"}
	an.Update(ctx, nil, names)
	zero := 0
	a := Alert{ID: "gpu-temp.gpu0.1", Node: selfID, Rule: "gpu-temp", Severity: "critical", GPU: &zero, Message: "GPU 0 at 91 °C", FiredAt: t0}
	an.Update(ctx, []Alert{a}, names)
	an.Update(ctx, []Alert{a}, names)
	low := a
	low.Rule, low.Severity, low.Was, low.Message = "gpu-throttle", "warning", "critical", "GPU 0 throttled; ended: GPU 0 at 91 °C"
	an.Update(ctx, []Alert{low}, names)
	low.Was = "" // a later record of the incident, its severity unchanged
	an.Update(ctx, []Alert{low}, names)
	an.Update(ctx, []Alert{low}, names)
	want := []Notification{
		{Summary: "gpu-temp on zeta", Body: "GPU 0 at 91 °C", Critical: true},
		{Summary: "gpu-throttle on zeta: lowered to warning from critical", Body: "GPU 0 throttled; ended: GPU 0 at 91 °C"},
	}
	if d := cmp.Diff(want, fn.all()); d != "" {
		t.Errorf("notifications (-want +got):\n%s", d)
	}
}
