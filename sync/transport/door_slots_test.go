package transport

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/labpool/labpool/sync/peer"
)

// slotStep is one step of a door's story: a connection from src enters
// (and is let in, having made room by closing evicted, or is refused by
// rule), or connection i opens a request, or delivers one whole, or has
// one answered, or time passes.
type slotStep struct {
	op      string // "enter", "open", "prove", "answer", "wait"
	src     string
	i       int
	wait    time.Duration
	rule    string // enter: the rule of its refusal; "" if let in
	evicted []int  // enter: the connections closed to make room, by number
}

func enter(src string, evicted ...int) slotStep {
	return slotStep{op: "enter", src: src, evicted: evicted}
}
func refused(src, rule string) slotStep { return slotStep{op: "enter", src: src, rule: rule} }
func open(i int) slotStep               { return slotStep{op: "open", i: i} }
func prove(i int) slotStep              { return slotStep{op: "prove", i: i} }
func answer(i int) slotStep             { return slotStep{op: "answer", i: i} }
func wait(d time.Duration) slotStep     { return slotStep{op: "wait", wait: d} }

// TestDoorSlots: the door's bounds per source, per network (/24, /64) and
// in all, and the newcomer that takes the slot of the oldest attempt that
// has finished, within the bound it is over, and only then.
func TestDoorSlots(t *testing.T) {
	wide := DoorConfig{Conns: 100, PerSource: 100, PerNetwork: 100}
	with := func(f func(*DoorConfig)) DoorConfig { c := wide; f(&c); return c }
	tests := []struct {
		name  string
		cfg   DoorConfig
		steps []slotStep
	}{
		{"per source", with(func(c *DoorConfig) { c.PerSource = 2 }), []slotStep{
			enter("10.0.0.1"), enter("10.0.0.1"), refused("10.0.0.1", "door per source"),
			refused("::ffff:10.0.0.1", "door per source"), enter("10.0.0.2"),
		}},
		{"per /24", with(func(c *DoorConfig) { c.PerNetwork = 3 }), []slotStep{
			enter("10.0.0.1"), enter("10.0.0.2"), enter("10.0.0.200"),
			refused("10.0.0.4", "door per network"), enter("10.0.1.1"), enter("11.0.0.1"),
		}},
		{"per /64", with(func(c *DoorConfig) { c.PerNetwork = 2 }), []slotStep{
			enter("2001:db8::1"), enter("2001:db8::ffff:1"),
			refused("2001:db8::2", "door per network"), enter("2001:db8:0:1::1"),
		}},
		{"in all", with(func(c *DoorConfig) { c.Conns = 3 }), []slotStep{
			enter("10.0.0.1"), enter("10.1.0.1"), enter("2001:db8::1"),
			refused("10.2.0.1", "door connections"),
		}},
		{"the oldest finished makes room", with(func(c *DoorConfig) { c.Conns = 3 }), []slotStep{
			enter("10.0.0.1"), enter("10.1.0.1"), enter("10.2.0.1"),
			open(0), answer(2), answer(1),
			enter("10.3.0.1", 1), enter("10.4.0.1", 2), refused("10.5.0.1", "door connections"),
		}},
		{"a request delivered whole keeps its slot until its deadline", with(func(c *DoorConfig) { c.Conns = 2 }), []slotStep{
			enter("10.0.0.1"), open(0), prove(0), enter("10.1.0.1"), open(1), prove(1),
			wait(6 * time.Second), refused("10.2.0.1", "door connections"),
			wait(time.Second), enter("10.2.0.1", 0),
		}},
		{"an open request not delivered whole within Proof", with(func(c *DoorConfig) { c.Conns = 2 }), []slotStep{
			enter("10.0.0.1"), wait(time.Second), open(0), enter("10.1.0.1"), open(1), prove(1),
			wait(999 * time.Millisecond), refused("10.2.0.1", "door connections"),
			wait(time.Millisecond), enter("10.2.0.1", 0), refused("10.3.0.1", "door connections"),
		}},
		{"Proof runs from the first request", with(func(c *DoorConfig) { c.Conns = 1 }), []slotStep{
			enter("10.0.0.1"), open(0), wait(900 * time.Millisecond), open(0),
			wait(100 * time.Millisecond), enter("10.1.0.1", 0),
		}},
		{"no request within Quiet", with(func(c *DoorConfig) { c.Conns = 1 }), []slotStep{
			enter("10.0.0.1"), refused("10.1.0.1", "door connections"),
			wait(2 * time.Second), enter("10.1.0.1", 0),
		}},
		{"room within the bound only", with(func(c *DoorConfig) { c.PerSource = 1 }), []slotStep{
			enter("10.0.0.1"), answer(0), enter("10.0.0.2"), answer(1),
			enter("10.0.0.2", 1), enter("10.0.0.1", 0),
		}},
		{"a network's finished attempt", with(func(c *DoorConfig) { c.PerNetwork = 2 }), []slotStep{
			enter("10.0.0.1"), enter("10.0.1.1"), answer(1), enter("10.0.0.2"), answer(2),
			enter("10.0.0.3", 2), enter("10.0.1.2"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := newDoor(tt.cfg, func(peer.ID) bool { return false })
				var conns []*doorConn
				closed := map[*doorConn]string{}
				for n, s := range tt.steps {
					switch s.op {
					case "enter":
						c := d.newConn(netip.MustParseAddr(s.src), nil)
						c.close = func(reason string) { closed[c] = reason; c.leave() }
						evicted, refusal := d.enter(c)
						var got []int
						for _, v := range evicted {
							got = append(got, slices.Index(conns, v))
						}
						if (s.rule == "") != (refusal == "") || !strings.HasSuffix(refusal, ruleSuffix(s.rule)) || !slices.Equal(got, s.evicted) {
							t.Fatalf("step %d, %s enters: refusal %q, evicted %v; want rule %q, evicted %v",
								n, s.src, refusal, got, s.rule, s.evicted)
						}
						for _, v := range evicted {
							v.close(d.cfg.evicted())
						}
						if refusal == "" {
							conns = append(conns, c)
						}
					case "open":
						if r := conns[s.i].begin(); r != "" {
							t.Fatalf("step %d: request of %d refused: %s", n, s.i, r)
						}
					case "prove":
						conns[s.i].prove()
					case "answer":
						if r := conns[s.i].begin(); r != "" {
							t.Fatalf("step %d: request of %d refused: %s", n, s.i, r)
						}
						conns[s.i].done()
					case "wait":
						time.Sleep(s.wait)
					}
				}
				if d.held() > tt.cfg.Conns {
					t.Errorf("%d at the door; want at most %d", d.held(), tt.cfg.Conns)
				}
				for c, reason := range closed {
					if !strings.HasSuffix(reason, "(rule: door connections)") {
						t.Errorf("connection %d closed with %q; want the rule door connections", slices.Index(conns, c), reason)
					}
				}
				for _, c := range conns {
					c.leave()
				}
			})
		})
	}
}

func ruleSuffix(rule string) string {
	if rule == "" {
		return ""
	}
	return fmt.Sprintf("(rule: %s)", rule)
}

// TestDoorConnLimits: a connection at the door is closed Idle after it
// entered whatever its requests (with one open then, at that request's
// end), and at its Requests+1-th request.
func TestDoorConnLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDoor(DoorConfig{Idle: 10 * time.Second, Requests: 3}, func(peer.ID) bool { return false })
		var reasons []string
		c := d.newConn(netip.MustParseAddr("10.0.0.1"), func(reason string) { reasons = append(reasons, reason) })
		if _, r := d.enter(c); r != "" {
			t.Fatal(r)
		}
		for range 2 {
			time.Sleep(4 * time.Second)
			if r := c.begin(); r != "" {
				t.Fatalf("request within the bounds refused: %s", r)
			}
			c.done()
		}
		if r := c.begin(); r != "" { // the third, open at Idle
			t.Fatalf("third request refused: %s", r)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if len(reasons) != 0 {
			t.Fatalf("closed at Idle with a request open: %q; want at that request's end", reasons)
		}
		if r := c.begin(); !strings.HasSuffix(r, "(rule: door requests)") {
			t.Errorf("fourth request: refusal %q; want the rule door requests", r)
		}
		c.done()
		if len(reasons) != 1 || !strings.HasSuffix(reasons[0], "(rule: door idle)") {
			t.Errorf("closed with %q when its request ended past Idle; want the rule door idle", reasons)
		}
		c.leave()
	})
}
