package containers

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/docker/docker/api/types/events"
)

// netnsFirewall is iptables in a network namespace of its own, removed at
// the end of the test: a firewall the test may change at will.
func netnsFirewall(t *testing.T) firewall {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	for _, bin := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skip(bin + " is not installed")
		}
	}
	ns := fmt.Sprintf("lpguard-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	return firewall{"ip", "netns", "exec", ns, "iptables"}
}

// dockerRestarts does to fw what a starting Docker engine (20.10) does,
// and what it does again at each network it creates: its jumps and a
// bridge's ACCEPTs go to the head of FORWARD, and a rule goes above the
// others in INPUT.
func dockerRestarts(t *testing.T, fw firewall, bridge string) {
	t.Helper()
	fw.run("-N", "DOCKER-USER")
	fw.run("-N", "DOCKER-ISOLATION-STAGE-1")
	fw.run("-D", "FORWARD", "-j", "DOCKER-USER")
	fw.run("-D", "FORWARD", "-j", "DOCKER-ISOLATION-STAGE-1")
	for _, rule := range [][]string{
		{"-I", "FORWARD", "1", "-o", bridge, "-m", "conntrack", "--ctstate", "RELATED,ESTABLISHED", "-j", "ACCEPT"},
		{"-I", "FORWARD", "1", "-i", bridge, "!", "-o", bridge, "-j", "ACCEPT"},
		{"-I", "FORWARD", "1", "-j", "DOCKER-ISOLATION-STAGE-1"},
		{"-I", "FORWARD", "1", "-j", "DOCKER-USER"},
		{"-I", "INPUT", "1", "-i", bridge, "-p", "udp", "--dport", "53", "-j", "ACCEPT"},
	} {
		if _, err := fw.run(rule...); err != nil {
			t.Fatal(err)
		}
	}
}

// guardFirst fails the test unless the guard's jumps are the first rules
// of INPUT and FORWARD, in order, and nowhere else in them.
func guardFirst(t *testing.T, fw firewall, when string) {
	t.Helper()
	for _, chain := range []string{"INPUT", "FORWARD"} {
		rules, err := chainRules(fw, chain)
		if err != nil {
			t.Fatal(err)
		}
		want := jumpsOf(chain)
		n := 0
		for _, r := range rules {
			if slices.Contains(want, r) {
				n++
			}
		}
		if len(rules) < len(want) || !slices.Equal(rules[:len(want)], want) || n != len(want) {
			t.Errorf("%s: %s is\n  %s\nwant it to start with\n  %s\nand hold each once", when, chain,
				strings.Join(rules, "\n  "), strings.Join(want, "\n  "))
		}
	}
}

// TestGuardJumpsStayFirst is the attack of audit finding 14 on a real
// firewall: the guard's FORWARD jumps came after Docker's per-bridge
// ACCEPTs, so that only Docker's own chains kept one job from another.
// They come first when the guard is installed over Docker's rules, again
// at a launch after Docker put its rules back on top (a restart, a new
// network), and again when the engine's event stream is opened anew (as
// after a restart of dockerd).
func TestGuardJumpsStayFirst(t *testing.T) {
	fw := netnsFirewall(t)
	dockerRestarts(t, fw, "docker0")
	f := &fakeDocker{start: func(string) error { return nil }}
	r := newRuntime(DefaultConfig(), f)
	r.firewalls = []firewall{fw}
	if err := r.guardHost(); err != nil {
		t.Fatal(err)
	}
	guardFirst(t, fw, "installed over Docker's rules")

	dockerRestarts(t, fw, "lpo0123456789ab")
	if _, err := r.Create(context.Background(), Launch{Name: "j1", Image: "img", Labels: map[string]string{LabelOwner: "bob"}}); err != nil {
		t.Fatal(err)
	}
	guardFirst(t, fw, "a launch after Docker put its rules first")

	dockerRestarts(t, fw, "docker0")
	evs, _ := r.Events(context.Background())
	for range evs { // the fake's stream ends at once
	}
	guardFirst(t, fw, "a new event stream after a restart of dockerd")

	// Nothing moves when nothing has to.
	before, _ := chainRules(fw, "FORWARD")
	if err := r.guardHost(); err != nil {
		t.Fatal(err)
	}
	if after, _ := chainRules(fw, "FORWARD"); !slices.Equal(before, after) {
		t.Errorf("FORWARD changed with the guard already first:\n%v\n%v", before, after)
	}
}

// TestGuardFirstAfterNetworkCreate: a network the owner creates by hand
// (docker network create) puts Docker's rules above the guard's; the
// engine's "network create" event puts the guard first again, with no
// launch in between, and so does the periodic check (GuardEvery) when
// Docker's rules moved without an event the agent saw.
func TestGuardFirstAfterNetworkCreate(t *testing.T) {
	fw := netnsFirewall(t)
	dockerRestarts(t, fw, "docker0")
	nets := make(chan events.Message)
	f := &fakeDocker{start: func(string) error { return nil }, netEvents: nets, containerEvents: make(chan events.Message)}
	r, logs := guardedRuntime(t, fw, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, _ := r.Events(ctx)

	dockerRestarts(t, fw, "br-byhand01234")
	nets <- events.Message{Type: events.NetworkEventType, Action: events.ActionCreate, Actor: events.Actor{ID: "n1"}}
	nets <- events.Message{Type: events.NetworkEventType, Action: events.ActionCreate, Actor: events.Actor{ID: "n2"}} // taken once the first is handled
	guardFirst(t, fw, "a network created by hand")
	cancel()
	for range evs {
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("an ERROR logged with the guard restored:\n%s", logs.String())
	}
}

// guardedRuntime is a Runtime over f and the firewall fw, its guard
// installed, logging into logs.
func guardedRuntime(t *testing.T, fw firewall, f *fakeDocker) (*Runtime, *strings.Builder) {
	t.Helper()
	logs := &strings.Builder{}
	cfg := DefaultConfig()
	cfg.Log = slog.New(slog.NewTextHandler(logs, nil))
	r := newRuntime(cfg, f)
	r.firewalls = []firewall{fw}
	if err := r.guardHost(); err != nil {
		t.Fatal(err)
	}
	return r, logs
}

// TestGuardPeriodicCheck: with no event at all, the guard is put first
// again within GuardEvery; a check that cannot restore it logs an ERROR
// naming the guard, once, and its recovery is logged too.
func TestGuardPeriodicCheck(t *testing.T) {
	fw := netnsFirewall(t)
	synctest.Test(t, func(t *testing.T) {
		f := &fakeDocker{start: func(string) error { return nil }, netEvents: make(chan events.Message), containerEvents: make(chan events.Message)}
		r, logs := guardedRuntime(t, fw, f)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		evs, _ := r.Events(ctx)

		dockerRestarts(t, fw, "br-quiet012345")
		time.Sleep(r.cfg.GuardEvery)
		synctest.Wait()
		guardFirst(t, fw, "one GuardEvery after Docker's rules moved")

		setFirewalls(r, firewall{"false"}) // a tool that fails: the guard cannot be restored
		for range 3 {
			time.Sleep(r.cfg.GuardEvery)
			synctest.Wait()
		}
		if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(logs.String(), "host guard") {
			t.Errorf("%d ERROR lines after 3 failed checks; want 1 naming the host guard:\n%s", n, logs.String())
		}
		setFirewalls(r, fw)
		time.Sleep(r.cfg.GuardEvery)
		synctest.Wait()
		if !strings.Contains(logs.String(), "first again") {
			t.Errorf("no line on the guard's recovery:\n%s", logs.String())
		}
		cancel()
		for range evs {
		}
	})
}

// setFirewalls swaps r's firewalls under the lock its checks hold.
func setFirewalls(r *Runtime, fws ...firewall) {
	r.guardMu.Lock()
	defer r.guardMu.Unlock()
	r.firewalls = fws
}

// Events streams f.containerEvents or f.netEvents, as the filter's type
// asks; nil: a stream that ends at once.
func (f *fakeDocker) Events(_ context.Context, o events.ListOptions) (<-chan events.Message, <-chan error) {
	msgs := f.containerEvents
	if o.Filters.ExactMatch("type", string(events.NetworkEventType)) {
		msgs = f.netEvents
	}
	if msgs == nil {
		c := make(chan events.Message)
		close(c)
		msgs = c
	}
	return msgs, make(chan error)
}
