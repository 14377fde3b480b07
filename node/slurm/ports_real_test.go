//go:build linux

package slurm

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// TestRealHoldsPort: a tunnel of a job reaches a port only where a process
// of that job listens: not another job's port, not a service of the node
// outside any job, not a port nothing listens on. (The attack: a member's
// job declares the port of another member's Jupyter, or of sshd.) Both
// jobs run in partition "first" (node1 alone), and the outside service in
// node1's namespace, so that all three ports are there to be reached.
func TestRealHoldsPort(t *testing.T) {
	c := needSlurm(t)
	if _, err := exec.LookPath("busybox"); err != nil {
		t.Skip("needs busybox (httpd)")
	}
	e := newRealExecutor(t, c)
	node1, ok := c.Node("node1")
	if !ok {
		t.Fatalf("no node1 in %v", c.Nodes)
	}
	svc := c.CommandOn(context.Background(), node1, "busybox", "httpd", "-f", "-p", "18082", "-h", t.TempDir())
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Process.Kill(); svc.Wait() })

	first := jobs.Resources{Partition: "first"}
	web := start(t, e, jobs.Task{ID: "web", Cmd: []string{"busybox", "httpd", "-f", "-p", "18080", "-h", t.TempDir()}, Ports: []int{18080}, Resources: first})
	spy := start(t, e, jobs.Task{ID: "spy", Cmd: []string{"sleep", "300"}, Ports: []int{18080, 18081, 18082}, Resources: first})
	for _, h := range []string{web.Handle, spy.Handle} {
		if st := waitState(t, e, h, running); !slices.Equal(st.Hosts, []string{node1.Name}) {
			t.Fatalf("job %s runs on %v, want %s", h, st.Hosts, node1.Name)
		}
	}
	// httpd listens a moment after the job runs.
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = e.HoldsPort(context.Background(), web.Handle, 18080); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the job's own port: %v", err)
	}
	for _, port := range []int{18080, 18081, 18082} {
		err := e.HoldsPort(context.Background(), spy.Handle, port)
		if err == nil || !strings.Contains(err.Error(), "tunnel-own-port") {
			t.Errorf("spy's tunnel to port %d: %v, want a refusal naming tunnel-own-port", port, err)
		}
	}
	// A port found held is believed for a while: no srun per connection.
	if err := e.HoldsPort(context.Background(), web.Handle, 18080); err != nil {
		t.Errorf("again: %v", err)
	}
}

// TestRealHoldsPortIPv6Only: a job's IPv6-only socket on [::] and the
// port of another member's IPv4 service does not open a tunnel to that
// service: the tunnel dials the node's IPv4 address, which the job does
// not hold. A dual-stack [::] socket of the job's own does.
func TestRealHoldsPortIPv6Only(t *testing.T) {
	c := needSlurm(t)
	py := "/usr/bin/python3"
	if _, err := exec.LookPath(py); err != nil {
		t.Skip("needs " + py)
	}
	e := newRealExecutor(t, c)
	node1, ok := c.Node("node1")
	if !ok {
		t.Fatalf("no node1 in %v", c.Nodes)
	}
	svc := c.CommandOn(context.Background(), node1, "busybox", "httpd", "-f", "-p", "0.0.0.0:18090", "-h", t.TempDir())
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Process.Kill(); svc.Wait() })
	listen := func(port string, v6only int) []string {
		return []string{py, "-c", `import socket,sys,time
s=socket.socket(socket.AF_INET6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, int(sys.argv[2]))
s.bind(("::", int(sys.argv[1])))
s.listen()
time.sleep(600)`, port, strconv.Itoa(v6only)}
	}
	first := jobs.Resources{Partition: "first"}
	spy := start(t, e, jobs.Task{ID: "v6spy", Cmd: listen("18090", 1), Ports: []int{18090}, Resources: first})
	own := start(t, e, jobs.Task{ID: "dual", Cmd: listen("18091", 0), Ports: []int{18091}, Resources: first})
	for _, h := range []string{spy.Handle, own.Handle} {
		if st := waitState(t, e, h, running); !slices.Equal(st.Hosts, []string{node1.Name}) {
			t.Fatalf("job %s runs on %v, want %s", h, st.Hosts, node1.Name)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = e.HoldsPort(context.Background(), own.Handle, 18091); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the job's own dual-stack port: %v", err)
	}
	// The spy's socket exists by now too (both jobs started together);
	// its check is asked once: a refusal is not cached.
	time.Sleep(time.Second)
	if err := e.HoldsPort(context.Background(), spy.Handle, 18090); err == nil || !strings.Contains(err.Error(), "tunnel-own-port") {
		t.Errorf("the tunnel of a job holding [::]:18090 IPv6-only, to the node's IPv4 service on 18090: %v, want a refusal naming tunnel-own-port", err)
	}
}
