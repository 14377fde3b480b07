package replica

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labpool/labpool/internal/leaktest"
	"github.com/labpool/labpool/sync/store"
)

// TestRunLeavesNoGoroutine: once Run has returned, no follower or stream
// it started is still running.
func TestRunLeavesNoGoroutine(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	member, self := testID("member"), testID("self")
	w, r := openDB(t, "w"), openDB(t, "r")
	if _, err := r.PutMember(context.Background(), store.MemberRow{ID: member.String(), Name: "m", Version: 1, AddedBy: member.String()}); err != nil {
		t.Fatal(err)
	}
	before := leaktest.Count()
	srv := httptest.NewServer(NewServer(w, member.String(), log))
	p := NewPeers(DefaultConfig(), r, self, httpDialer{srv}, log)
	p.Hint(member.String(), "test")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()
	waitUntil(t, 10*time.Second, "member online", func() bool { return p.Online(member.String()) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	srv.Close() // ends the server's side of the stream and the client's idle connections
	leaktest.Check(t, before, 3*time.Second)
}
