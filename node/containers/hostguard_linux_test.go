package containers

import (
	"context"
	"fmt"
	"github.com/docker/docker/api/types/events"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
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

// Events is a stream that ends at once.
func (f *fakeDocker) Events(context.Context, events.ListOptions) (<-chan events.Message, <-chan error) {
	msgs := make(chan events.Message)
	close(msgs)
	return msgs, make(chan error)
}
