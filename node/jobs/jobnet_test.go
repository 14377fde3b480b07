package jobs

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"strings"
	"testing"
)

// TestJobNetworkPolicy: a launch joins the network the machine's policy
// names ("outside" by default); a mode it does not know is refused, naming
// the field; an adoption removes the networks of jobs gone meanwhile.
func TestJobNetworkPolicy(t *testing.T) {
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 0, &memStore{})
	ctx := context.Background()
	if m.Policy().JobNetwork != NetOutside {
		t.Errorf("default job network %q, want outside", m.Policy().JobNetwork)
	}
	p := m.Policy()
	p.JobNetwork = "bridge"
	if err := m.SetPolicy(p); err == nil || !strings.Contains(err.Error(), `job network "bridge"`) {
		t.Errorf("SetPolicy(bridge) = %v, want refused", err)
	}
	p.JobNetwork = NetIsolated
	if err := m.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Submit(ctx, member("alice"), Spec{Image: "img:1"}); err != nil {
		t.Fatal(err)
	}
	if l := rt.launchOf("c0001"); l.Container.Network != NetIsolated {
		t.Errorf("launch on network %q, want isolated", l.Container.Network)
	}
	if err := m.adopt(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rt.callList(), ","), "Prune") {
		t.Errorf("adoption left the networks of gone jobs: calls %v", rt.callList())
	}
}

// TestTunnelDialsTheContainer: a tunnel reaches the job's port at its
// container's address (nothing is published on the host), and a port the
// job does not offer is refused.
func TestTunnelDialsTheContainer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.WriteString(c, "the job answers")
		c.Close()
	}()
	rt := newFakeRuntime()
	m := newTestManager(t, rt, 0, &memStore{})
	srv := trustServer(t, m)
	code, body := call(t, srv, peer("alice"), "POST", "/v1/jobs", `{"image":"img","ports":[8080]}`)
	var j Job
	if code != 200 || json.Unmarshal([]byte(body), &j) != nil {
		t.Fatalf("launch: %d %s", code, body)
	}
	rt.mu.Lock()
	rt.cs[j.Container].Ports[8080] = ln.Addr().(*net.TCPAddr).Port // the container's address and port
	rt.mu.Unlock()
	if code, body := call(t, srv, peer("alice"), "POST", "/v1/jobs/"+j.ID+"/tunnel?port=8080", ""); code != 200 || body != "the job answers" {
		t.Errorf("tunnel = %d %q, want the job's answer", code, body)
	}
	if code, body := call(t, srv, peer("alice"), "POST", "/v1/jobs/"+j.ID+"/tunnel?port=22", ""); code != 409 || !strings.Contains(body, "no_port") {
		t.Errorf("tunnel to port 22 = %d %s, want 409 no_port", code, body)
	}
}
