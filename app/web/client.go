package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/labpool/labpool/app"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ErrNoDaemon means no labpool daemon answers on the data directory's socket.
var ErrNoDaemon = errors.New("no labpool daemon is running")

// Client calls the local API of a daemon over its unix socket.
type Client struct {
	socket string
	hc     *http.Client // for short calls
	stream *http.Client // for the events stream (no timeout)
}

// NewClient returns a client of the daemon listening on socket.
func NewClient(socket string) *Client {
	tr := SocketTransport(socket)
	return &Client{
		socket: socket,
		hc:     &http.Client{Transport: tr, Timeout: 60 * time.Second},
		stream: &http.Client{Transport: tr},
	}
}

// Ping reports whether a daemon answers on the socket.
func (c *Client) Ping(ctx context.Context) error {
	_, err := c.Self(ctx)
	return err
}

// Self returns this machine's identity.
func (c *Client) Self(ctx context.Context) (app.Self, error) {
	var s app.Self
	return s, c.do(ctx, http.MethodGet, "/api/v1/self", nil, &s)
}

// Nodes returns every member of the pool, this machine included.
func (c *Client) Nodes(ctx context.Context) ([]app.Node, error) {
	var n []app.Node
	return n, c.do(ctx, http.MethodGet, "/api/v1/nodes", nil, &n)
}

// GPUs returns every GPU of the pool.
func (c *Client) GPUs(ctx context.Context) ([]app.GPU, error) {
	var g []app.GPU
	return g, c.do(ctx, http.MethodGet, "/api/v1/gpus", nil, &g)
}

// History returns a node's samples of the last seconds.
func (c *Client) History(ctx context.Context, node string, seconds int) (app.History, error) {
	var h app.History
	q := url.Values{"node": {node}, "seconds": {strconv.Itoa(seconds)}}
	return h, c.do(ctx, http.MethodGet, "/api/v1/history?"+q.Encode(), nil, &h)
}

// Pool returns the pool this machine belongs to.
func (c *Client) Pool(ctx context.Context) (app.PoolStatus, error) {
	var p app.PoolStatus
	return p, c.do(ctx, http.MethodGet, "/api/v1/pool", nil, &p)
}

// CreatePool creates a pool with this machine as the first device of its
// owner, the person req.As.
func (c *Client) CreatePool(ctx context.Context, req app.CreateRequest) (app.JoinCode, error) {
	var j app.JoinCode
	return j, c.do(ctx, http.MethodPost, "/api/v1/pool/create", req, &j)
}

// AddDevice makes a code that adds one device to a person.
func (c *Client) AddDevice(ctx context.Context, req app.AddDeviceRequest) (app.DeviceCode, error) {
	var d app.DeviceCode
	return d, c.do(ctx, http.MethodPost, "/api/v1/pool/devices", req, &d)
}

// MergePeople makes person who one with person into (owners).
func (c *Client) MergePeople(ctx context.Context, who, into string) error {
	return c.do(ctx, http.MethodPost, "/api/v1/pool/merge", app.MergeRequest{Who: who, Into: into}, nil)
}

// JoinPool joins the pool of code, found by mDNS or at req.Addr.
func (c *Client) JoinPool(ctx context.Context, req app.JoinRequest) (app.PoolStatus, error) {
	var p app.PoolStatus
	return p, c.do(ctx, http.MethodPost, "/api/v1/pool/join", req, &p)
}

// RemoveMember removes a device from the pool.
func (c *Client) RemoveMember(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/pool/members/"+url.PathEscape(id), nil, nil)
}

// ReadmitMember takes back a device removed from the pool.
func (c *Client) ReadmitMember(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodPost, "/api/v1/pool/members/"+url.PathEscape(id)+"/readmit", nil, nil)
}

// Invites lists the pool's invites.
func (c *Client) Invites(ctx context.Context) ([]app.Invite, error) {
	var v []app.Invite
	return v, c.do(ctx, http.MethodGet, "/api/v1/pool/invites", nil, &v)
}

// CreateInvite makes an invite code.
func (c *Client) CreateInvite(ctx context.Context, req app.InviteRequest) (app.NewInvite, error) {
	var v app.NewInvite
	return v, c.do(ctx, http.MethodPost, "/api/v1/pool/invites", req, &v)
}

// RevokeInvite ends an invite.
func (c *Client) RevokeInvite(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/pool/invites/"+url.PathEscape(id), nil, nil)
}

// SetRole changes a member's role.
func (c *Client) SetRole(ctx context.Context, id, role string) error {
	return c.do(ctx, http.MethodPut, "/api/v1/pool/members/"+url.PathEscape(id)+"/role", app.RoleRequest{Role: role}, nil)
}

// Probe reports what the machine at addr answers to this daemon.
func (c *Client) Probe(ctx context.Context, addr string) (app.ProbeResult, error) {
	var p app.ProbeResult
	return p, c.do(ctx, http.MethodPost, "/api/v1/probe", app.ProbeRequest{Addr: addr}, &p)
}

// Events streams events until ctx ends or the daemon goes away; fn must not
// block for long.
func (c *Client) Events(ctx context.Context, fn func(name string, data json.RawMessage)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://labpool/api/v1/events", nil)
	if err != nil {
		return err
	}
	resp, err := c.stream.Do(req)
	if err != nil {
		return c.wrap(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ReadError(resp)
	}
	return ReadSSE(resp.Body, fn)
}

// ReadSSE decodes a text/event-stream of "event:" and "data:" lines.
func ReadSSE(r io.Reader, fn func(name string, data json.RawMessage)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var name string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() > 0 {
				fn(name, json.RawMessage(bytes.Clone(data.Bytes())))
			}
			name = ""
			data.Reset()
		case strings.HasPrefix(line, "event:"):
			name = strings.TrimSpace(line[len("event:"):])
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(line[len("data:"):], " "))
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read events: %w", err)
	}
	return io.ErrUnexpectedEOF
}

func jsonBody(in any) (io.Reader, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		var err error
		if body, err = jsonBody(in); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://labpool"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.wrap(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return ReadError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode %s %s: %w", method, path, err)
	}
	return nil
}

func (c *Client) wrap(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return fmt.Errorf("%w (socket %s)", ErrNoDaemon, c.socket)
	}
	return err
}

// Policy asks the daemon for this machine's policy.
func (c *Client) Policy(ctx context.Context) (app.Policy, error) {
	var p app.Policy
	return p, c.do(ctx, http.MethodGet, "/api/v1/policy", nil, &p)
}

// SetPolicy asks the daemon to change this machine's policy.
func (c *Client) SetPolicy(ctx context.Context, u app.PolicyUpdate) (app.Policy, error) {
	var p app.Policy
	return p, c.do(ctx, http.MethodPut, "/api/v1/policy", u, &p)
}

// Call sends method and path with the JSON of in (nil: no body) and decodes
// the answer into an Out: the client of a route that has no method here.
func Call[Out any](ctx context.Context, c *Client, method, path string, in any) (Out, error) {
	var out Out
	return out, c.do(ctx, method, path, in, &out)
}
