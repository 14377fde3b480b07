package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSessions: the sessions between machines, where the network is least
// kind. Each agent's interface carries no multicast, so there is no mDNS at
// all: every agent keeps running and says once that discovery is off; B and
// C join through A by address, a command given right after a join finds its
// machine, and B reaches C although neither ever heard of the other except
// through A (each member relays the addresses the others published).
func TestSessions(t *testing.T) {
	l := newLAN(t, "a", "b", "c")
	a, b, c := l.host("a"), l.host("b"), l.host("c")
	for _, h := range l.hosts {
		l.ip("-n", h.ns, "link", "set", "eth0", "multicast", "off")
		h.agent()
	}
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	t.Run("no multicast: discovery off, said once", func(t *testing.T) {
		for _, h := range l.hosts {
			if n := strings.Count(h.logText(), "mdns discovery is off"); n != 1 {
				t.Errorf("%s: said %d times that discovery is off; want once", h.name, n)
			}
		}
	})
	share := filepath.Join(t.TempDir(), "share")
	if err := os.MkdirAll(share, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(share, "hello.txt"), []byte("hello from a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	joinCode := lastLine(mustCLI(t, a, "pool", "create"))
	mustCLI(t, a, "share", "data", share)

	t.Run("cp right after join", func(t *testing.T) {
		for _, h := range []*host{b, c} {
			mustCLI(t, h, "pool", "join", joinCode, a.ip+":7420")
			dst := filepath.Join(t.TempDir(), h.name)
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			mustCLI(t, h, "cp", "a:data/hello.txt", dst+"/")
			if got, err := os.ReadFile(filepath.Join(dst, "hello.txt")); err != nil || string(got) != "hello from a\n" {
				t.Errorf("%s: copied %q, %v", h.name, got, err)
			}
		}
	})
	if t.Failed() {
		return
	}
	t.Run("joined by address, every member reaches every other", func(t *testing.T) {
		for _, h := range l.hosts {
			waitFor(t, 20*time.Second, h.name+" sees a, b and c live", func() error {
				return liveNodes(h, "a", "b", "c")
			})
		}
	})
}
