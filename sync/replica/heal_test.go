package replica

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/transport"
)

// The endpoint the daemon dials with can abandon a dial under way.
var _ dropper = (*transport.Endpoint)(nil)

// dropDialer records the dials it was told to abandon.
type dropDialer struct{ dropped *[]peer.ID }

func (d dropDialer) Client(peer.ID, []string) *http.Client { return http.DefaultClient }
func (d dropDialer) Drop(id peer.ID)                       { *d.dropped = append(*d.dropped, id) }

// healPeers returns Peers following n members, none online, and the
// followers in order.
func healPeers(t *testing.T, n int, dropped *[]peer.ID) (*Peers, []*follower) {
	t.Helper()
	p := NewPeers(DefaultConfig(), nil, peer.NewID([]byte("self")), dropDialer{dropped}, slog.New(slog.DiscardHandler))
	var fs []*follower
	for i := range n {
		f := &follower{id: peer.NewID([]byte{byte(i)}), wake: make(chan struct{}, 1), cancel: func() {}}
		p.peers[f.id.String()] = f
		fs = append(fs, f)
	}
	return p, fs
}

func woken(f *follower) bool {
	select {
	case <-f.wake:
		return true
	default:
		return false
	}
}

// TestHeardRestartsOldDial: a stream opened by an offline member wakes its
// follower and abandons its dial when that dial is older than restartDial;
// an online member's follower is left alone, and so are the others.
func TestHeardRestartsOldDial(t *testing.T) {
	var dropped []peer.ID
	p, fs := healPeers(t, 3, &dropped)
	fs[0].dialing = time.Now().Add(-time.Second) // under way for a second
	fs[1].online = true
	p.Heard(fs[0].id.String())
	p.Heard(fs[1].id.String())
	if !woken(fs[0]) || woken(fs[1]) || woken(fs[2]) {
		t.Errorf("woken: want only the offline member heard from")
	}
	if !slices.Equal(dropped, []peer.ID{fs[0].id}) {
		t.Errorf("dropped %v, want the old dial of %v", dropped, fs[0].id)
	}
	if !fs[0].dialing.IsZero() {
		t.Errorf("an abandoned dial is still marked under way")
	}
	p.Heard(peer.NewID([]byte("stranger")).String()) // no follower: nothing happens
}

// TestKickLeavesYoungDial: a dial younger than restartDial sent its first
// packet after the change: it is not abandoned, and its follower is woken
// for the retry after it.
func TestKickLeavesYoungDial(t *testing.T) {
	var dropped []peer.ID
	p, fs := healPeers(t, 1, &dropped)
	now := time.Now()
	for _, tt := range []struct {
		age  time.Duration
		drop bool
	}{{0, false}, {restartDial - time.Millisecond, false}, {restartDial, true}, {10 * time.Second, true}} {
		fs[0].dialing = now.Add(-tt.age)
		got := p.kick(fs[0], now, nil)
		if (len(got) == 1) != tt.drop || !woken(fs[0]) {
			t.Errorf("a dial of age %v: dropped %v, want %v, and woken", tt.age, got, tt.drop)
		}
	}
	var idle follower
	idle.wake = make(chan struct{}, 1)
	if got := p.kick(&idle, now, nil); len(got) != 0 || !woken(&idle) {
		t.Errorf("no dial under way: dropped %v, want none, and woken", got)
	}
}

// TestBackOnlineWakesTheOthers: a session that comes up after its machine
// was offline wakes every other offline follower (and abandons their old
// dials), but not an online one nor a removed member's.
func TestBackOnlineWakesTheOthers(t *testing.T) {
	var dropped []peer.ID
	p, fs := healPeers(t, 4, &dropped)
	old := time.Now().Add(-3 * time.Second)
	fs[1].dialing = old
	fs[2].online = true
	fs[3].cancel = nil // removed
	fs[3].dialing = old
	p.setOnline(fs[0], true)
	if want := []bool{false, true, false, false}; !slices.Equal([]bool{woken(fs[0]), woken(fs[1]), woken(fs[2]), woken(fs[3])}, want) {
		t.Errorf("woken: want only the other offline member")
	}
	if !slices.Equal(dropped, []peer.ID{fs[1].id}) {
		t.Errorf("dropped %v, want %v", dropped, fs[1].id)
	}
	p.setOnline(fs[0], true) // no change: nothing woken
	if woken(fs[1]) {
		t.Errorf("a follower already online woke the others again")
	}
}

// hangDialer's requests wait, as a dial to an unreachable machine does,
// until their context ends.
type hangDialer struct{ dropDialer }

func (d hangDialer) Client(peer.ID, []string) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		<-r.Context().Done()
		return nil, r.Context().Err()
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSilentDialDropped: a session whose dial the watchdog ends drops that
// dial (it would outlive the request), so the next session dials afresh;
// a session ended by its follower's stop drops nothing.
func TestSilentDialDropped(t *testing.T) {
	var dropped []peer.ID
	cfg := DefaultConfig()
	cfg.Silence = 20 * time.Millisecond
	p := NewPeers(cfg, openDB(t, "r"), peer.NewID([]byte("self")), hangDialer{dropDialer{&dropped}}, slog.New(slog.DiscardHandler))
	f := &follower{id: peer.NewID([]byte("unreachable")), wake: make(chan struct{}, 1)}
	f.book.hint([]string{"192.0.2.1:7420"})
	if err := p.session(context.Background(), f); !errors.Is(err, context.Canceled) {
		t.Fatalf("session = %v, want the watchdog's cancel", err)
	}
	if !slices.Equal(dropped, []peer.ID{f.id}) {
		t.Errorf("dropped %v, want the dial of %v", dropped, f.id)
	}
	dropped = nil
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(time.Millisecond, cancel)
	cfg.Silence = time.Hour
	p.cfg = cfg
	if err := p.session(ctx, f); !errors.Is(err, context.Canceled) {
		t.Fatalf("session = %v, want its follower's cancel", err)
	}
	if len(dropped) != 0 {
		t.Errorf("a stopped follower dropped %v", dropped)
	}
}
