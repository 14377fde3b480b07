package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// Bindings are the methods the Wails window calls (window.go.app.Bindings).
// Each validates, delegates to the daemon's local API and returns (T, error).
type Bindings struct {
	client     DaemonClient
	selfTest   string // file the self-test report goes to; "" when off
	ctx        context.Context
	quit       func()
	emit       func(name string, data any)
	browse     func(url string) // opens the system browser
	selfTested chan struct{}
	logs       logFollows
}

// NewBindings returns bindings over the daemon at client. With selfTest
// set, the UI reports what it rendered to that file and the window quits.
func NewBindings(client DaemonClient, selfTest string) *Bindings {
	return &Bindings{client: client, selfTest: selfTest, ctx: context.Background(), selfTested: make(chan struct{})}
}

// StartBindings connects the bindings to the window's lifetime: ctx is the
// Wails runtime context, emit sends an event to the page, quit closes the
// window. It relays the daemon's events until ctx is cancelled.
func StartBindings(ctx context.Context, b *Bindings, emit func(name string, data any), quit func(), browse func(url string)) {
	b.ctx, b.quit, b.emit, b.browse = ctx, quit, emit, browse
	go func() {
		for ctx.Err() == nil {
			err := b.client.Events(ctx, func(name string, data json.RawMessage) { emit(name, data) })
			if ctx.Err() != nil {
				return
			}
			_ = err // the daemon restarted or went away: try again shortly
			time.Sleep(500 * time.Millisecond)
		}
	}()
	if b.selfTest != "" {
		go func() {
			select {
			case <-b.selfTested:
				time.Sleep(5 * time.Second) // time for a screenshot of the window
			case <-time.After(60 * time.Second):
				os.WriteFile(b.selfTest, []byte(`{"error":"the page sent no self-test report in 60 s"}`), 0o644)
			case <-ctx.Done():
				return
			}
			quit()
		}()
	}
}

func (b *Bindings) call() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, 30*time.Second)
}

// Self returns this machine's identity.
func (b *Bindings) Self() (Self, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Self(ctx)
}

// Nodes returns every member of the pool.
func (b *Bindings) Nodes() ([]Node, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Nodes(ctx)
}

// GPUs returns every GPU of the pool.
func (b *Bindings) GPUs() ([]GPU, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.GPUs(ctx)
}

// History returns a node's samples over the last seconds.
func (b *Bindings) History(nodeID string, seconds int) (History, error) {
	if nodeID == "" || seconds <= 0 {
		return History{}, errors.New("history needs a node and a positive number of seconds")
	}
	ctx, cancel := b.call()
	defer cancel()
	return b.client.History(ctx, nodeID, seconds)
}

// Pool returns the pool this machine belongs to.
func (b *Bindings) Pool() (PoolStatus, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Pool(ctx)
}

// CreatePool creates a pool and returns its join code.
func (b *Bindings) CreatePool() (JoinCode, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.CreatePool(ctx)
}

// JoinPool joins the pool of code, at addr when multicast does not reach.
func (b *Bindings) JoinPool(code, addr string) (PoolStatus, error) {
	if code == "" {
		return PoolStatus{}, errors.New("enter the join code printed by `labpool pool create`")
	}
	ctx, cancel := b.call()
	defer cancel()
	return b.client.JoinPool(ctx, JoinRequest{Code: code, Addr: addr})
}

// RemoveMember removes a device from the pool.
func (b *Bindings) RemoveMember(id string) error {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.RemoveMember(ctx, id)
}

// Invites lists the pool's invites.
func (b *Bindings) Invites() ([]Invite, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.Invites(ctx)
}

// CreateInvite makes an invite for role, good for uses joins (0: unlimited)
// for expiresSeconds (0: 24 hours).
func (b *Bindings) CreateInvite(role string, uses int, expiresSeconds int64) (NewInvite, error) {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.CreateInvite(ctx, InviteRequest{Role: role, Uses: uses, ExpiresSeconds: expiresSeconds})
}

// RevokeInvite ends an invite.
func (b *Bindings) RevokeInvite(id string) error {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.RevokeInvite(ctx, id)
}

// SetRole changes a member's role.
func (b *Bindings) SetRole(id, role string) error {
	ctx, cancel := b.call()
	defer cancel()
	return b.client.SetRole(ctx, id, role)
}

// SelfTestEnabled tells the page to report what it rendered.
func (b *Bindings) SelfTestEnabled() bool { return b.selfTest != "" }

// SelfTestReport saves the page's report and closes the window.
func (b *Bindings) SelfTestReport(report string) error {
	if b.selfTest == "" {
		return errors.New("self-test is off")
	}
	if !json.Valid([]byte(report)) {
		return fmt.Errorf("self-test report is not JSON")
	}
	if err := os.WriteFile(b.selfTest, []byte(report), 0o644); err != nil {
		return err
	}
	select {
	case <-b.selfTested:
	default:
		close(b.selfTested)
	}
	return nil
}
