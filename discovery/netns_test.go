package discovery

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper())
	}
	os.Exit(m.Run())
}

// Two hosts, A (10.203.77.1) and B (10.203.77.2), each in a network
// namespace with an eth0 plugged into a bridge that lives in a third one, so
// nothing touches this machine's own network.
const (
	addrA = "10.203.77.1"
	addrB = "10.203.77.2"
)

// requireNetns skips a test that needs root and iproute2, unless CI=true.
func requireNetns(tb testing.TB, why string) {
	tb.Helper()
	msg := "multicast test across network namespaces needs root and iproute2: " + why
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg + " (CI=true: failing, not skipping)")
	}
	tb.Skip("skip " + msg + " (never skipped when CI=true)")
}

// newLink makes the two hosts and returns their namespaces; they are
// deleted when the test ends, failed or not.
func newLink(tb testing.TB) (nsA, nsB string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		requireNetns(tb, "not root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		requireNetns(tb, "ip not found")
	}
	suffix := fmt.Sprint(os.Getpid())
	sw, nsA, nsB := "lpdiscsw-"+suffix, "lpdisc1-"+suffix, "lpdisc2-"+suffix
	tb.Cleanup(func() {
		for _, ns := range []string{nsA, nsB, sw} {
			exec.Command("ip", "netns", "del", ns).Run() // absent after a failed setup: fine
		}
	})
	if out, err := exec.Command("ip", "netns", "add", sw).CombinedOutput(); err != nil {
		requireNetns(tb, fmt.Sprintf("ip netns add: %v: %s", err, out))
	}
	cmds := [][]string{
		{"netns", "add", nsA},
		{"netns", "add", nsB},
		{"-n", sw, "link", "add", "br0", "type", "bridge", "mcast_snooping", "0"},
		{"-n", sw, "link", "set", "br0", "up"},
	}
	for i, h := range []struct{ ns, addr string }{{nsA, addrA}, {nsB, addrB}} {
		port := fmt.Sprintf("p%d", i+1)
		cmds = append(cmds,
			[]string{"-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", h.ns},
			[]string{"-n", sw, "link", "set", port, "master", "br0", "up"},
			[]string{"-n", h.ns, "addr", "add", h.addr + "/24", "dev", "eth0"},
			[]string{"-n", h.ns, "link", "set", "eth0", "multicast", "on", "up"},
			[]string{"-n", h.ns, "link", "set", "lo", "up"},
		)
	}
	for _, args := range cmds {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			tb.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nsA, nsB
}

// event is one JSON line from a helper.
type event map[string]any

func (e event) str(k string) string { s, _ := e[k].(string); return s }

func (e event) int(k string) int64 {
	n, _ := e[k].(json.Number)
	v, _ := n.Int64()
	return v
}

func (e event) strs(k string) []string {
	var out []string
	list, _ := e[k].([]any)
	for _, v := range list {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// helper is a helper process seen from the test.
type helper struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer
	exited chan struct{}

	mu      sync.Mutex // guards events and changed
	events  []event
	changed chan struct{} // closed at each new event
}

// startHelper runs the helper as instance self in namespace ns.
func startHelper(tb testing.TB, ns, self string) *helper {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatalf("find test binary: %v", err)
	}
	h := &helper{name: self, exited: make(chan struct{}), changed: make(chan struct{})}
	h.cmd = exec.Command("ip", "netns", "exec", ns, exe, "-test.run=^$")
	h.cmd.Env = append(os.Environ(), helperEnv+"="+self, helperIfaceEnv+"=eth0")
	h.cmd.Stderr = &h.stderr
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		tb.Fatalf("start helper %s: %v", self, err)
	}
	go h.read(out)
	tb.Cleanup(func() {
		h.stdin.Close()
		select {
		case <-h.exited:
		case <-time.After(20 * time.Second):
			h.cmd.Process.Kill()
			<-h.exited
		}
		if tb.Failed() {
			tb.Logf("helper %s stderr:\n%s", h.name, h.stderr.String())
		}
	})
	return h
}

func (h *helper) read(out io.Reader) {
	defer func() {
		h.cmd.Wait()
		close(h.exited)
	}()
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var e event
		if dec.Decode(&e) != nil {
			e = event{"msg": "raw", "line": sc.Text()}
		}
		h.mu.Lock()
		h.events = append(h.events, e)
		close(h.changed)
		h.changed = make(chan struct{})
		h.mu.Unlock()
	}
}

func (h *helper) send(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if _, err := fmt.Fprintf(h.stdin, format+"\n", args...); err != nil {
		tb.Fatalf("send to helper %s: %v", h.name, err)
	}
}

// all returns the events so far that match.
func (h *helper) all(match func(event) bool) []event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []event
	for _, e := range h.events {
		if match(e) {
			out = append(out, e)
		}
	}
	return out
}

// waitFor returns the first event that matches, waiting up to timeout.
func (h *helper) waitFor(tb testing.TB, timeout time.Duration, what string, match func(event) bool) event {
	tb.Helper()
	deadline := time.After(timeout)
	for {
		h.mu.Lock()
		i := slices.IndexFunc(h.events, match)
		changed := h.changed
		h.mu.Unlock()
		if i >= 0 {
			return h.all(match)[0]
		}
		select {
		case <-changed:
		case <-h.exited:
			tb.Fatalf("helper %s exited before %s; stderr:\n%s", h.name, what, h.stderr.String())
		case <-deadline:
			tb.Fatalf("helper %s: no %s within %v", h.name, what, timeout)
		}
	}
}

// finish closes the helper's stdin and checks that it stopped cleanly with
// no goroutine left behind.
func (h *helper) finish(tb testing.TB) {
	tb.Helper()
	h.stdin.Close()
	select {
	case <-h.exited:
	case <-time.After(20 * time.Second):
		tb.Fatalf("helper %s did not exit", h.name)
	}
	if !h.cmd.ProcessState.Success() {
		tb.Errorf("helper %s: %v; stderr:\n%s", h.name, h.cmd.ProcessState, h.stderr.String())
	}
	done := h.all(func(e event) bool { return e.str("msg") == "helper done" })
	if len(done) != 1 {
		tb.Fatalf("helper %s wrote no \"helper done\"", h.name)
	}
	if left, base := done[0].int("goroutines"), done[0].int("baseline"); left > base {
		tb.Errorf("helper %s: %d goroutines left after Run returned, want <= %d:\n%s", h.name, left, base, done[0].str("stacks"))
	}
	for _, e := range h.all(func(e event) bool { return e.str("level") == "ERROR" || strings.HasSuffix(e.str("msg"), "returned") }) {
		if e.str("level") == "ERROR" || e.str("err") != "<nil>" {
			tb.Errorf("helper %s: %v", h.name, e)
		}
	}
}

func found(instance string) func(event) bool {
	return func(e event) bool { return e.str("msg") == "found" && e.str("instance") == instance }
}

func registered(instance string) func(event) bool {
	return func(e event) bool { return e.str("msg") == "mdns registered" && e.str("instance") == instance }
}

// checkCandidate checks what B heard about A: its TXT and its addresses.
func checkCandidate(t *testing.T, e event, instance, addr string) {
	t.Helper()
	if got, want := e.str("id"), helperID(instance); got != want {
		t.Errorf("%s: id = %q; want %q", instance, got, want)
	}
	if e.int("v") != 1 || e.int("port") != helperPort {
		t.Errorf("%s: v = %d, port = %d; want 1, %d", instance, e.int("v"), e.int("port"), helperPort)
	}
	addrs := e.strs("addrs")
	if want := fmt.Sprintf("%s:%d", addr, helperPort); len(addrs) == 0 || addrs[0] != want {
		t.Errorf("%s: addrs = %q; want %q first", instance, addrs, want)
	}
	for _, s := range addrs {
		ap, err := netip.ParseAddrPort(s)
		if err != nil || ap.Addr().Is6() && ap.Addr().IsLinkLocalUnicast() && ap.Addr().Zone() != "eth0" {
			t.Errorf("%s: address %q: want a link-local IPv6 address only with zone eth0 (%v)", instance, s, err)
		}
	}
}

// measure starts announcing a new instance on a and returns the time from
// its registration to b's found call.
func measure(tb testing.TB, a, b *helper, name string) time.Duration {
	tb.Helper()
	a.send(tb, "start %s -", name)
	reg := a.waitFor(tb, 10*time.Second, "registration of "+name, registered(name))
	f := b.waitFor(tb, 10*time.Second, "candidate "+name, found(name))
	a.send(tb, "stop %s", name)
	return time.Duration(f.int("seen_ns") - reg.int("t_ns"))
}

func TestDiscoveryAcrossNamespaces(t *testing.T) {
	nsA, nsB := newLink(t)
	a := startHelper(t, nsA, "node-a")
	b := startHelper(t, nsB, "node-b")

	checkCandidate(t, b.waitFor(t, 10*time.Second, "candidate node-a", found("node-a")), "node-a", addrA)
	checkCandidate(t, a.waitFor(t, 10*time.Second, "candidate node-b", found("node-b")), "node-b", addrB)

	t.Run("set txt", func(t *testing.T) {
		a.send(t, "set node-a lab_7")
		e := b.waitFor(t, 5*time.Second, "node-a in pool lab_7", func(e event) bool {
			return found("node-a")(e) && e.str("pool") == "lab_7"
		})
		checkCandidate(t, e, "node-a", addrA)
	})

	t.Run("re-browse refreshes", func(t *testing.T) {
		// zeroconf reports an instance once per query; the Browser asks again
		// every Interval, so found keeps hearing from a live machine.
		first := b.waitFor(t, time.Second, "candidate node-a", found("node-a")).int("seen_ns")
		b.waitFor(t, 3*DefaultConfig().Interval, "a later candidate node-a", func(e event) bool {
			return found("node-a")(e) && time.Duration(e.int("seen_ns")-first) > DefaultConfig().Interval
		})
	})

	t.Run("latency", func(t *testing.T) {
		var lat []time.Duration
		for i := range 7 {
			lat = append(lat, measure(t, a, b, fmt.Sprintf("lat-%d", i)))
		}
		slices.Sort(lat)
		t.Logf("register to found, across namespaces: median %v, min %v, max %v", lat[len(lat)/2], lat[0], lat[len(lat)-1])
		// The product target is 500 ms. The Announcer's query for itself
		// makes it a few ms; zeroconf's own first announcement alone would
		// take 100 to 500 ms.
		if med := lat[len(lat)/2]; med > 100*time.Millisecond {
			t.Errorf("median register to found = %v; want under 100ms", med)
		}
	})

	a.finish(t)
	b.finish(t)
	if n := len(a.all(found("node-a"))) + len(b.all(found("node-b"))); n > 0 {
		t.Errorf("a Browser reported its own instance %d times", n)
	}
}

// TestDiscoveryIPv4Only checks hosts with IPv6 turned off: no AAAA records,
// and discovery as fast as with both families.
func TestDiscoveryIPv4Only(t *testing.T) {
	nsA, nsB := newLink(t)
	for _, ns := range []string{nsA, nsB} {
		for _, key := range []string{"all", "default", "eth0"} {
			arg := "net.ipv6.conf." + key + ".disable_ipv6=1"
			if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", arg).CombinedOutput(); err != nil {
				t.Fatalf("sysctl %s in %s: %v: %s", arg, ns, err, out)
			}
		}
	}
	a := startHelper(t, nsA, "v4-a")
	b := startHelper(t, nsB, "v4-b")
	e := b.waitFor(t, 10*time.Second, "candidate v4-a", found("v4-a"))
	checkCandidate(t, e, "v4-a", addrA)
	if addrs := e.strs("addrs"); len(addrs) != 1 {
		t.Errorf("v4-a: addrs = %q; want only the IPv4 one", addrs)
	}
	checkCandidate(t, a.waitFor(t, 10*time.Second, "candidate v4-b", found("v4-b")), "v4-b", addrB)
	if lat := measure(t, a, b, "v4-lat"); lat > 100*time.Millisecond {
		t.Errorf("register to found = %v; want under 100ms", lat)
	}
	a.finish(t)
	b.finish(t)
}

// BenchmarkDiscoveryLatency measures the time from registering a new
// instance in one namespace to the Browser in the other reporting it, as a
// running viewer would see a new agent (run with -benchtime=20x).
func BenchmarkDiscoveryLatency(b *testing.B) {
	nsA, nsB := newLink(b)
	ha := startHelper(b, nsA, "bench-a")
	hb := startHelper(b, nsB, "bench-b")
	hb.waitFor(b, 10*time.Second, "candidate bench-a", found("bench-a"))
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		lat = append(lat, measure(b, ha, hb, fmt.Sprintf("bench-%d", i)))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}
