//go:build linux

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/folders"
)

// TestCopyRoams changes the laptop's address in the middle of a 768 MiB
// copy from a server into a local folder of the laptop, as a laptop that
// moves to another network does: the copy goes on by itself to the end
// (no new copy is started), the file matches, and the server sent the
// bytes already copied only once (its interface's count of bytes sent).
func TestCopyRoams(t *testing.T) {
	if testing.Short() {
		t.Skip("768 MiB copy: skipped in -short mode")
	}
	l := newLAN(t, "laptop", "server")
	laptop, server := l.host("laptop"), l.host("server")
	for _, h := range l.hosts {
		// IPv4 only: the link-local IPv6 address would survive the change
		// and carry the copy on unharmed.
		if out, err := exec.Command("ip", "netns", "exec", h.ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1").CombinedOutput(); err != nil {
			t.Fatalf("disable ipv6 in %s: %v %s", h.ns, err, out)
		}
		h.agent()
		h.waitDaemon()
	}
	joinAll(t, server, laptop)
	waitFor(t, 20*time.Second, "laptop follows server", func() error { return liveNodes(laptop, "server") })
	base := t.TempDir()
	data, into := filepath.Join(base, "data"), filepath.Join(base, "into")
	os.MkdirAll(data, 0o755)
	os.MkdirAll(into, 0o755)
	const size = 768 << 20
	want := writeRandom(t, filepath.Join(data, "big.bin"), size)
	mustCLI(t, server, "share", "data", data)
	// The server sends at 1 Gbit/s at most, so that the copy lasts long
	// enough to roam in the middle of it on a fast machine.
	if out, err := exec.Command("ip", "-n", server.ns, "link", "set", "eth0", "txqueuelen", "1000").CombinedOutput(); err != nil {
		t.Logf("txqueuelen: %v %s", err, out)
	}
	if out, err := exec.Command("tc", "-n", server.ns, "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "1gbit", "burst", "1mb", "latency", "50ms").CombinedOutput(); err != nil {
		t.Logf("no rate limit (%v %s): the copy runs at full speed", err, out)
	}
	txBefore := txBytes(t, server)

	c := laptop.client()
	tr, err := c.Copy(context.Background(), app.CopyRequest{Src: "server:data/big.bin", Dst: into + "/"})
	if err != nil {
		t.Fatal(err)
	}
	for tr.State == "running" && tr.Progress.Sent < size/4 {
		time.Sleep(10 * time.Millisecond)
		if tr, err = c.Transfer(context.Background(), tr.Node, tr.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	if tr.State != "running" {
		t.Fatalf("the copy ended before a quarter was sent (%s, %d bytes): the test proves nothing", tr.State, tr.Progress.Sent)
	}
	// Roam: the old address goes, a new one comes.
	roamed := strings.TrimSuffix(laptop.ip, ".1") + ".101"
	l.ip("-n", laptop.ns, "addr", "del", laptop.ip+"/24", "dev", "eth0")
	l.ip("-n", laptop.ns, "addr", "add", roamed+"/24", "dev", "eth0")
	t.Logf("roamed from %s to %s with %d MiB of %d copied", laptop.ip, roamed, tr.Progress.Sent>>20, size>>20)

	var end app.Transfer
	waitFor(t, 3*time.Minute, "the copy to end", func() error {
		end, err = c.Transfer(context.Background(), tr.Node, tr.ID, 5*time.Second)
		if err != nil || end.State == "running" {
			return fmt.Errorf("state %s %v", end.State, err)
		}
		return nil
	})
	if end.State != "done" {
		t.Fatalf("the copy ended %s: %s", end.State, end.Error)
	}
	if got := fileSum(t, filepath.Join(into, "big.bin")); !bytes.Equal(got, want) {
		t.Error("the copied file differs from the source")
	}
	if end.Progress.Sent != size {
		t.Errorf("%d bytes received; want %d, each block once", end.Progress.Sent, size)
	}
	// Bytes on the server's wire: the file, TLS and TCP/IP headers (under
	// 4%), and what was in flight to the old address when it went (a few
	// MiB a stream). A copy started again would have sent a quarter more.
	sent := txBytes(t, server) - txBefore
	limit := int64(size)*104/100 + 4*8*folders.BlockSize
	t.Logf("the server sent %d MiB for %d MiB (limit %d MiB)", sent>>20, size>>20, limit>>20)
	if sent > limit {
		t.Errorf("the server sent %d bytes for a %d-byte file: more than the copy once", sent, size)
	}
	// The copy went on by itself: the laptop asked for the blocks again,
	// and it is the one copy listed.
	if n := askedAgain(laptop, tr.ID); n < 1 {
		t.Errorf("the copy's log says it asked again %d times: the address change did not touch it (the test proves nothing)", n)
	}
	list, err := c.Transfers(context.Background())
	if err != nil || len(list) != 1 {
		t.Errorf("copies listed: %d (%v); want the one", len(list), err)
	}
}

// txBytes is the count of bytes h's eth0 has sent.
func txBytes(t *testing.T, h *host) int64 {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", h.ns, "cat", "/sys/class/net/eth0/statistics/tx_bytes").Output()
	if err != nil {
		t.Fatalf("tx bytes of %s: %v", h.name, err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// askedAgain is the asked_again count h's log gives for copy id's end.
func askedAgain(h *host, id string) int {
	h.mu.Lock()
	logs := h.log.String()
	h.mu.Unlock()
	m := regexp.MustCompile(`msg="copy ended" id=` + regexp.QuoteMeta(id) + `.* asked_again=(\d+)`).FindStringSubmatch(logs)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
