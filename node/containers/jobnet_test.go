//go:build linux

package containers

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"
	"github.com/labpool/labpool/node/containers/dockertest"
)

// listen accepts TCP connections on every address of this host and
// answers each with word.
func listen(t *testing.T, word string) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, word+"\n")
			c.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestJobNetworks is the attack of issue 15 on one engine: a job tries
// another job's port and this host's ports. Each job is on a network of
// its own: no job reaches another; a job reaches labpool's ports of its
// host in no mode, and the host's other services only in mode "host";
// the agent (this test) reaches a job's port at its address; removing a
// job removes its network.
func TestJobNetworks(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a docker engine: skipped in -short mode")
	}
	labpoolPort, otherPort := listen(t, "labpool-port"), listen(t, "other-service")
	// labpool's QUIC is UDP: a datagram to the same port number must not
	// arrive either.
	udp, err := net.ListenPacket("udp4", fmt.Sprintf("0.0.0.0:%d", labpoolPort))
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	got := make(chan string, 16)
	go func() {
		b := make([]byte, 64)
		for {
			n, from, err := udp.ReadFrom(b)
			if err != nil {
				return
			}
			got <- fmt.Sprintf("%q from %v", b[:n], from)
		}
	}()
	cfg := DefaultConfig()
	cfg.Host = dockertest.Engine(t)
	cfg.GuardPorts = []int{labpoolPort}
	r, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	ctx := context.Background()
	stamp := time.Now().UnixNano()
	web := launch(fmt.Sprintf("lp-web-%d", stamp), "sh", "-c", "echo victim-notebook > /tmp/index.html; httpd -f -p 8080 -h /tmp")
	web.Ports, web.Labels[LabelOwner] = []int{8080}, fmt.Sprint("victim-", stamp)
	a, err := r.Run(ctx, web)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, r, a.ID)
	if a.Addr == "" || a.Ports[8080] != 8080 {
		t.Fatalf("container %+v: want its address and port 8080", a)
	}
	// The agent's side of a tunnel: dial the container's address.
	var body string
	for i := 0; i < 50 && !strings.Contains(body, "victim-notebook"); i++ {
		if resp, err := http.Get("http://" + net.JoinHostPort(a.Addr, "8080") + "/"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
		} else {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !strings.Contains(body, "victim-notebook") {
		t.Fatalf("the agent does not reach the job at %s:8080: %q", a.Addr, body)
	}
	probe := fmt.Sprintf(`gw=$(ip route | awk '/default/ {print $3}'); [ -n "$gw" ] || gw=$(ip -4 addr show eth0 | awk '/inet / {split($2,a,"/"); split(a[1],o,"."); print o[1]"."o[2]"."o[3]".1"}')
echo "gateway $gw"
printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 %s 8080 2>&1 | sed 's/^/job: /'
for p in %d %d; do nc -w 2 $gw $p </dev/null 2>&1 | sed "s/^/host $p: /"; done
echo quic-from-a-job | nc -u -w 1 $gw %d; echo done`, a.Addr, labpoolPort, otherPort, labpoolPort)
	for _, tt := range []struct {
		mode      string
		wantOther bool
	}{{NetOutside, false}, {NetIsolated, false}, {NetHost, true}} {
		t.Run(tt.mode, func(t *testing.T) {
			l := launch(fmt.Sprintf("lp-probe-%s-%d", tt.mode, stamp), "sh", "-c", probe)
			l.Network, l.Labels[LabelOwner] = tt.mode, "mallory"
			out := runToEnd(t, r, l)
			t.Logf("probe said:\n%s", out)
			if !strings.Contains(out, "done") {
				t.Fatalf("the probe did not finish")
			}
			if strings.Contains(out, "victim-notebook") {
				t.Errorf("a job read another job's port")
			}
			if strings.Contains(out, "labpool-port") {
				t.Errorf("a job reached this host's labpool port")
			}
			if got := strings.Contains(out, "other-service"); got != tt.wantOther {
				t.Errorf("the job reached the host's other service: %v, want %v", got, tt.wantOther)
			}
		})
	}
	// A datagram from this test itself arrives: the listener works.
	if c, err := net.Dial("udp4", fmt.Sprintf("127.0.0.1:%d", labpoolPort)); err == nil {
		c.Write([]byte("control"))
		c.Close()
	}
	if first := <-got; !strings.Contains(first, "control") {
		t.Errorf("a job's datagram reached this host's labpool port: %s", first)
	}
	if err := r.Remove(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.api.NetworkInspect(ctx, r.networkName(web, NetOutside), network.InspectOptions{}); err == nil {
		t.Errorf("the job's network stayed after its removal")
	}
}
