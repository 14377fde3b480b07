package transport

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// TestDoorOpenRequestHog (the audit's attack): a stranger on the joiner's
// /24 tries a new connection every 250 ms (the strangers' handshake budget
// of 4 a second; holding the /24's 16 places for Quiet+Request, 7 s, takes
// 2.3) from 40 addresses there, each
// keeping a request open that never delivers a whole request (no join
// proof). The joiner, in the same /24, connects and sends its whole
// request at once; it must find room whenever it comes: the hogs' open
// requests count as finished once they have gone Proof without a whole
// request, so one of them is closed to make room, naming the rule.
func TestDoorOpenRequestHog(t *testing.T) {
	for _, at := range []time.Duration{20 * time.Second, 20*time.Second + 200*time.Millisecond, 31*time.Second + 300*time.Millisecond} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := newDoor(DefaultDoor(), func(peer.ID) bool { return false })
				var all []*doorConn
				closed := map[*doorConn]string{}
				connect := func(src string) (*doorConn, string) {
					c := d.newConn(netip.MustParseAddr(src), nil)
					c.close = func(reason string) { closed[c] = reason; c.leave() }
					evicted, refusal := d.enter(c)
					for _, v := range evicted {
						v.close(d.cfg.evicted())
					}
					if refusal == "" {
						all = append(all, c)
					}
					return c, refusal
				}
				// The hog tries every 250 ms (its budget, 4 a second) and
				// gets in whenever its oldest place has finished; the
				// joiner comes right after the hog got in.
				start := time.Now()
				for i := 0; ; i++ {
					c, refusal := connect(fmt.Sprintf("10.0.0.%d", 100+i%40))
					if refusal == "" {
						if r := c.begin(); r != "" { // opened, and never delivers a whole request
							t.Fatalf("hog's request refused: %s", r)
						}
						if time.Since(start) >= at {
							break
						}
					}
					time.Sleep(250 * time.Millisecond)
				}
				if n := d.held(); n < d.cfg.PerNetwork {
					t.Fatalf("%d hogs at the door; want the /24's %d places held", n, d.cfg.PerNetwork)
				}
				joiner, refusal := connect("10.0.0.5")
				if refusal != "" {
					t.Fatalf("joiner on the hogs' /24 refused: %s; want a hog closed to make room", refusal)
				}
				if r := joiner.begin(); r != "" {
					t.Fatalf("joiner's request refused: %s", r)
				}
				joiner.prove()
				// The next hog, however soon, does not take the joiner's place.
				if _, refusal := connect("10.0.0.99"); refusal == "" && !joiner.stillIn() {
					t.Fatalf("the joiner, its whole request delivered, was closed for a hog")
				}
				for _, reason := range closed {
					if !strings.HasSuffix(reason, "(rule: door connections)") {
						t.Errorf("hog closed with %q; want the rule door connections", reason)
					}
				}
				for _, c := range all {
					c.leave()
				}
			})
		})
	}
}
