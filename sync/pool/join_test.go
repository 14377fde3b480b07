package pool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/labpool/labpool/sync/peer"
	"github.com/labpool/labpool/sync/pool"
	"github.com/labpool/labpool/sync/transport"
)

// memberStore is a member's replica in memory: the fake of the real store.
type memberStore struct {
	mu   sync.Mutex // guards set and code
	set  pool.Set
	code *pool.Code
}

func (s *memberStore) pool() (pool.Code, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code == nil {
		return pool.Code{}, false
	}
	return *s.code, true
}

func (s *memberStore) members() []pool.Member {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set.All()
}

func (s *memberStore) admit(m pool.Member) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set.Apply(m)
	return nil
}

func (s *memberStore) allowed(id peer.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.set.Allowed(id)
}

func newEndpoint(t *testing.T) *transport.Endpoint {
	t.Helper()
	id, err := peer.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := transport.DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	ep, err := transport.New(id, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

func serve(t *testing.T, ep *transport.Endpoint, h http.Handler) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ep.Serve(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// startMember serves the join endpoint and one members-only path, the way
// the daemon wires them, from an endpoint holding store.
func startMember(t *testing.T, store *memberStore) *transport.Endpoint {
	ep := newEndpoint(t)
	store.mu.Lock()
	store.set.Apply(pool.Member{ID: ep.ID(), Name: "lab1", Version: 1, AddedBy: ep.ID(), AddedAt: time.Now()})
	store.mu.Unlock()
	mux := http.NewServeMux()
	mux.Handle(pool.JoinPath, pool.JoinHandler(pool.JoinConfig{
		Self: ep.ID(), Name: func() string { return "lab1" },
		Pool: store.pool, Members: store.members, Admit: store.admit,
		Log: slog.New(slog.DiscardHandler),
	}))
	mux.HandleFunc("/v1/nodes", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "[]") })
	serve(t, ep, transport.Authorize(store.allowed, []string{pool.JoinPath}, mux))
	return ep
}

// join dials the member unpinned and joins with code.
func join(t *testing.T, joiner, member *transport.Endpoint, code pool.Code) (pool.JoinResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := joiner.DialAny(ctx, member.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if conn.PeerID() != member.ID() {
		t.Fatalf("DialAny reached %v; want %v", conn.PeerID(), member.ID())
	}
	ekm, err := conn.KeyingMaterial()
	if err != nil {
		t.Fatal(err)
	}
	return pool.Join(ctx, conn.Client(), ekm, code, joiner.ID(), "laptop")
}

func status(t *testing.T, from, to *transport.Endpoint, path string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://peer"+path, nil)
	resp, err := from.Client(to.ID(), []string{to.Addr().String()}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestJoinAdmits(t *testing.T) {
	code, _ := pool.NewCode()
	store := &memberStore{set: pool.NewSet(), code: &code}
	member, joiner := startMember(t, store), newEndpoint(t)
	if got := status(t, joiner, member, "/v1/nodes"); got != http.StatusForbidden {
		t.Fatalf("stranger got %d on a members-only path; want 403", got)
	}
	resp, err := join(t, joiner, member, code)
	if err != nil {
		t.Fatal(err)
	}
	got := pool.NewSet(resp.Members...)
	if resp.PoolID != code.PoolID() || resp.Name != "lab1" || !got.Allowed(joiner.ID()) || !got.Allowed(member.ID()) {
		t.Fatalf("JoinResponse = %+v", resp)
	}
	rec := got[joiner.ID()]
	if rec.Version != 2 || rec.AddedBy != member.ID() || rec.Name != "laptop" {
		t.Errorf("joiner's record = %+v; want version 2 written by the member", rec)
	}
	if !store.allowed(joiner.ID()) {
		t.Error("member did not store the joiner")
	}
	if got := status(t, joiner, member, "/v1/nodes"); got != http.StatusOK {
		t.Errorf("new member got %d; want 200", got)
	}
	// Joining again is harmless and writes nothing.
	if _, err := join(t, joiner, member, code); err != nil {
		t.Fatal(err)
	}
	if v := pool.NewSet(store.members()...)[joiner.ID()].Version; v != 2 {
		t.Errorf("second join rewrote the record: version %d", v)
	}
}

func TestJoinRefused(t *testing.T) {
	code, _ := pool.NewCode()
	wrong := code
	wrong.Secret[0] ^= 1
	other, _ := pool.NewCode()
	removed := newEndpoint(t)
	tests := []struct {
		name   string
		inPool bool
		joiner *transport.Endpoint
		code   pool.Code
		want   error
	}{
		{"wrong code", true, nil, wrong, pool.ErrWrongCode},
		{"other pool", true, nil, other, pool.ErrOtherPool},
		{"not in a pool", false, nil, code, pool.ErrNotInPool},
		{"removed device", true, removed, code, pool.ErrRemoved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memberStore{set: pool.NewSet()}
			if tt.inPool {
				store.code = &code
			}
			member := startMember(t, store)
			store.mu.Lock()
			store.set.Remove(removed.ID(), member.ID(), time.Now())
			store.mu.Unlock()
			before := store.members()
			joiner := tt.joiner
			if joiner == nil {
				joiner = newEndpoint(t)
			}
			_, err := join(t, joiner, member, tt.code)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Join = %v; want %v", err, tt.want)
			}
			if len(store.members()) != len(before) {
				t.Error("a refused join changed the member set")
			}
			if got := status(t, joiner, member, "/v1/nodes"); got != http.StatusForbidden {
				t.Errorf("refused joiner got %d on a members-only path; want 403", got)
			}
		})
	}
}

// TestJoinProofIsBoundToSession replays a proof made for one TLS session
// on another: the member must refuse it.
func TestJoinProofIsBoundToSession(t *testing.T) {
	code, _ := pool.NewCode()
	member, joiner := startMember(t, &memberStore{set: pool.NewSet(), code: &code}), newEndpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first, err := joiner.DialAny(ctx, member.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	staleEKM, _ := first.KeyingMaterial()
	first.Close()
	second, err := joiner.DialAny(ctx, member.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if _, err := pool.Join(ctx, second.Client(), staleEKM, code, joiner.ID(), "x"); !errors.Is(err, pool.ErrWrongCode) {
		t.Errorf("replayed proof: Join = %v; want ErrWrongCode", err)
	}
}

// TestJoinImpostor: a device that answers 200 without knowing the secret
// is not believed.
func TestJoinImpostor(t *testing.T) {
	code, _ := pool.NewCode()
	impostor, joiner := newEndpoint(t), newEndpoint(t)
	serve(t, impostor, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(pool.JoinResponse{PoolID: code.PoolID(), Proof: make([]byte, 32)})
	}))
	if _, err := join(t, joiner, impostor, code); !errors.Is(err, pool.ErrImpostor) {
		t.Errorf("Join = %v; want ErrImpostor", err)
	}
}

func TestJoinErrorMessages(t *testing.T) {
	tests := map[error]string{
		pool.ErrWrongCode: "wrong join code",
		pool.ErrNotInPool: "this machine is not in a pool",
	}
	for err, want := range tests {
		if got := fmt.Sprint(err); got != want {
			t.Errorf("message = %q; want %q", got, want)
		}
	}
}
