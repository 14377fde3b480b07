package folders

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// device is a test device with a key, as a daemon holds one.
type device struct {
	id   string
	priv ed25519.PrivateKey
}

func newDevice(t testing.TB) device {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return device{id: DeviceID(pub), priv: priv}
}

func (d device) signer() Signer {
	return Signer{Key: d.priv.Public().(ed25519.PublicKey), Sign: func(m []byte) []byte { return ed25519.Sign(d.priv, m) }}
}

// clock is a settable time for a registry.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// pool is a registry served over HTTP: the test's peer header stands for
// the device TLS proved (the daemon reads transport.PeerID).
type pool struct {
	t     *testing.T
	self  device
	clk   *clock
	reg   *Registry
	roles map[string]string
	srv   *httptest.Server
}

const peerHeader = "Test-Peer"

func newPool(t *testing.T) *pool {
	p := &pool{t: t, self: newDevice(t), clk: &clock{now: time.Unix(1_700_000_000, 0)}, roles: map[string]string{}}
	cfg := DefaultConfig()
	cfg.Self, cfg.Now, cfg.DataDir = p.self.id, p.clk.Now, t.TempDir()
	var err error
	if p.reg, err = OpenWith(cfg, &memStore{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	role := func(id string) string { mu.Lock(); defer mu.Unlock(); return p.roles[id] }
	p.srv = httptest.NewServer(Handler(p.reg, Access{
		Caller: func(r *http.Request) Caller {
			id := r.Header.Get(peerHeader)
			return Caller{ID: id, Role: role(id)}
		},
		Role: role,
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// client is an http.Client of the device peer reaching the pool's server.
func (p *pool) client(peer string) *http.Client {
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		u, _ := url.Parse(p.srv.URL)
		r.URL.Scheme, r.URL.Host = u.Scheme, u.Host
		r.Header.Set(peerHeader, peer)
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// get asks op of a folder as peer, with grant (may be ""), and returns the
// status and body.
func (p *pool) get(peer, folder, op, path, grant string) (int, string) {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "https://node/v1/folders/"+folder+"/"+op+"?"+url.Values{"path": {path}}.Encode(), nil)
	if grant != "" {
		req.Header.Set(GrantHeader, grant)
	}
	resp, err := p.client(peer).Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

func (p *pool) grant(by device, folder, path, receiver string) string {
	p.t.Helper()
	g, err := by.signer().Grant(p.self.id, folder, path, receiver, p.clk.Now())
	if err != nil {
		p.t.Fatal(err)
	}
	return g
}

// privateShare shares a directory with alice only.
func privateShare(t *testing.T, p *pool, alice device, rw bool) string {
	dir := filepath.Join(t.TempDir(), "private")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "secret.txt"), []byte("for alice"), 0o600)
	os.WriteFile(filepath.Join(dir, "sub", "deep.txt"), []byte("deeper"), 0o600)
	if _, err := p.reg.Add(Share{Name: "private", Path: dir, ReadWrite: rw, Members: []string{alice.id}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestResolveForChecksMembers: a share with a member list is not mounted
// into another member's job (Resolve ignored the list).
func TestResolveForChecksMembers(t *testing.T) {
	p := newPool(t)
	alice, bob := newDevice(t), newDevice(t)
	dir := privateShare(t, p, alice, true)
	if _, err := p.reg.ResolveFor("private", bob.id, true); !errors.Is(err, ErrNotMember) {
		t.Errorf("bob's job mounts alice's folder: %v", err)
	}
	if _, err := p.reg.ResolveFor("private", "", false); !errors.Is(err, ErrNotMember) {
		t.Errorf("a job without an owner mounts it: %v", err)
	}
	got, err := p.reg.ResolveFor("private", alice.id, true)
	if real, _ := filepath.EvalSymlinks(dir); err != nil || got != real {
		t.Errorf("alice's job: %q, %v; want %q", got, err, real)
	}
	if _, err := p.reg.ResolveFor("private", p.self.id, false); err != nil {
		t.Errorf("this machine's own job: %v", err)
	}
	ro, _ := p.reg.Add(Share{Name: "ro", Path: t.TempDir()})
	if _, err := p.reg.ResolveFor(ro.Name, bob.id, true); !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a read-write mount of a read-only share: %v", err)
	}
	p.reg.Add(Share{Name: "xfer-1", Path: t.TempDir(), Members: []string{bob.id}, Transient: true})
	if _, err := p.reg.ResolveFor("xfer-1", bob.id, false); err == nil {
		t.Errorf("a transient share was mounted")
	}
}

// TestBrowseChecksMembersAndRoles: the list of shares and ls check the
// caller's device against the member list; viewers browse.
func TestBrowseChecksMembersAndRoles(t *testing.T) {
	p := newPool(t)
	alice, bob, vera, stranger := newDevice(t), newDevice(t), newDevice(t), newDevice(t)
	p.roles[alice.id], p.roles[bob.id], p.roles[vera.id] = RoleMember, RoleMember, RoleViewer
	privateShare(t, p, alice, false)
	p.reg.Add(Share{Name: "open", Path: t.TempDir()})
	tests := []struct {
		who, folder string
		want        int
	}{
		{alice.id, "private", 200},
		{bob.id, "private", 404},
		{vera.id, "private", 404},
		{vera.id, "open", 200},
		{stranger.id, "open", 403},
		{p.self.id, "private", 200},
	}
	for _, tt := range tests {
		if code, body := p.get(tt.who, tt.folder, "ls", "", ""); code != tt.want {
			t.Errorf("ls %s as %s: %d %s; want %d", tt.folder, tt.who[:4], code, body, tt.want)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, "https://node/v1/folders", nil)
	resp, err := p.client(bob.id).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var infos []Info
	json.NewDecoder(resp.Body).Decode(&infos)
	resp.Body.Close()
	if len(infos) != 1 || infos[0].Name != "open" {
		t.Errorf("bob lists %+v; want only open", infos)
	}
}

// TestCopyChecksTheAskingMember: in a copy alice asks of two machines,
// the source checks alice's rights through her grant, not the receiver's.
func TestCopyChecksTheAskingMember(t *testing.T) {
	p := newPool(t)
	alice, bob, recv, vera := newDevice(t), newDevice(t), newDevice(t), newDevice(t)
	p.roles[alice.id], p.roles[bob.id], p.roles[recv.id], p.roles[vera.id] = RoleMember, RoleMember, RoleMember, RoleViewer
	privateShare(t, p, alice, false)
	p.reg.Add(Share{Name: "open", Path: t.TempDir()})

	check := func(name string, code int, body string, want int, rule string) {
		t.Helper()
		if code != want || rule != "" && !strings.Contains(body, rule) {
			t.Errorf("%s: %d %s; want %d naming %q", name, code, strings.TrimSpace(body), want, rule)
		}
	}
	code, body := p.get(recv.id, "private", "walk", "", p.grant(alice, "private", "", recv.id))
	check("the receiver reads with alice's grant", code, body, 200, "")
	code, body = p.get(alice.id, "private", "walk", "", "")
	check("no grant, even for a member", code, body, 403, "needs a valid grant")
	code, body = p.get(recv.id, "private", "walk", "", p.grant(bob, "private", "", recv.id))
	check("bob's grant for alice's folder", code, body, 404, "member list")
	code, body = p.get(bob.id, "private", "walk", "", p.grant(alice, "private", "", recv.id))
	check("alice's grant replayed by another device", code, body, 403, "another receiver")
	code, body = p.get(recv.id, "open", "walk", "", p.grant(vera, "open", "", recv.id))
	check("a viewer's grant", code, body, 403, "viewers")
	code, body = p.get(recv.id, "open", "walk", "", p.grant(alice, "private", "", recv.id))
	check("a grant for another folder", code, body, 403, "names the folder")
	code, body = p.get(recv.id, "private", "sums", "secret.txt", p.grant(alice, "private", "sub", recv.id))
	check("a path outside the granted one", code, body, 403, "outside the granted path")
	code, body = p.get(recv.id, "private", "sums", "sub/deep.txt", p.grant(alice, "private", "sub", recv.id))
	check("a path under the granted one", code, body, 200, "")

	forged := p.grant(alice, "private", "", recv.id)
	g, _ := DecodeGrant(forged)
	g.Receiver = bob.id
	forged, _ = g.Encode() // the old signature over new content
	code, body = p.get(bob.id, "private", "walk", "", forged)
	check("an edited grant", code, body, 403, "signature")

	// Expiry: a grant starts a copy within GrantTTL; a copy that uses it
	// keeps it while it makes progress.
	old := p.grant(alice, "private", "", recv.id)
	running := p.grant(alice, "private", "", recv.id)
	p.get(recv.id, "private", "walk", "", running)
	for i := 0; i < 4; i++ {
		p.clk.Add(2 * time.Minute)
		code, body = p.get(recv.id, "private", "walk", "", running)
		check("a running copy's grant", code, body, 200, "")
	}
	code, body = p.get(recv.id, "private", "walk", "", old)
	check("an unused grant past its expiry", code, body, 403, "expired")
	p.clk.Add(4 * time.Minute)
	code, body = p.get(recv.id, "private", "walk", "", running)
	check("a copy's grant idle past GrantIdle", code, body, 403, "expired")

	// Alice removed from the pool: her grant ends at once.
	fresh := p.grant(alice, "private", "", recv.id)
	p.get(recv.id, "private", "walk", "", fresh)
	p.roles[alice.id] = ""
	code, body = p.get(recv.id, "private", "walk", "", fresh)
	check("the grant of a removed member", code, body, 403, "only members")
}

// TestOneFileOffer: `cp FILE NODE:` offers the file alone: the receiver
// neither lists nor reads its siblings (the whole parent directory, e.g.
// ~/.ssh, used to be offered), and the copy still works.
func TestOneFileOffer(t *testing.T) {
	p := newPool(t)
	recv := newDevice(t)
	p.roles[recv.id] = RoleMember
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "id_ed25519.pub"), []byte("ssh-ed25519 AAAA me"), 0o644)
	os.WriteFile(filepath.Join(dir, "id_ed25519"), []byte("PRIVATE KEY"), 0o600)
	if _, err := p.reg.Add(Share{Name: "xfer-1", Path: filepath.Join(dir, "id_ed25519.pub"), Members: []string{recv.id}, Transient: true}); err != nil {
		t.Fatal(err)
	}
	grant := p.grant(p.self, "xfer-1", "", recv.id)
	for _, op := range []string{"ls", "walk", "sums", "read"} {
		for _, sib := range []string{"id_ed25519", "../id_ed25519", "id_ed25519.pub"} {
			if code, body := p.get(recv.id, "xfer-1", op, sib, grant); code == 200 || strings.Contains(body, "PRIVATE") {
				t.Errorf("%s %s of a one-file offer: %d %q", op, sib, code, body)
			}
		}
	}
	if code, body := p.get(recv.id, "xfer-1", "ls", "", ""); code != 200 || strings.Contains(body, `"id_ed25519"`) || !strings.Contains(body, "id_ed25519.pub") {
		t.Errorf("ls of the offer: %d %s", code, body)
	}
	if _, _, err := p.reg.OpenRoot("xfer-1", "", false); err == nil {
		t.Errorf("OpenRoot opened the directory of a one-file offer")
	}
	// The file itself, through the client, as a copy brings it (a walk,
	// then a bundle of the small files; the copy engine is node/folders/copies).
	src := HTTPSource{Client: p.client(recv.id), Folder: "xfer-1", Grant: grant}
	var items []FileMeta
	err := src.Walk(context.Background(), "", func(it FileMeta) error {
		items = append(items, it)
		return nil
	})
	if err != nil || len(items) != 1 || items[0].Dir {
		t.Fatalf("walk of the offer: %+v, %v; want the one file", items, err)
	}
	rc, err := src.Bundle(context.Background(), []string{items[0].Rel})
	if err != nil {
		t.Fatalf("bundle of the offered file: %v", err)
	}
	var got []string
	err = ReadBundle(rc, func(item BundleItem, data []byte) error {
		got = append(got, item.Path+"="+string(data))
		return nil
	})
	rc.Close()
	if err != nil || len(got) != 1 || !strings.HasSuffix(got[0], "=ssh-ed25519 AAAA me") {
		t.Errorf("the bundle brought %q, %v", got, err)
	}
	// Another device, even with the offering machine's grant, is refused.
	other := newDevice(t)
	p.roles[other.id] = RoleMember
	if code, _ := p.get(other.id, "xfer-1", "walk", "", p.grant(p.self, "xfer-1", "", other.id)); code == 200 {
		t.Errorf("a device the file was not offered to read it")
	}
}

// TestTransientShareIdles: an offer ends after TransientIdle without a
// request, whatever the receiver says about its copy.
func TestTransientShareIdles(t *testing.T) {
	p := newPool(t)
	recv := newDevice(t)
	p.roles[recv.id] = RoleMember
	p.reg.Add(Share{Name: "xfer-2", Path: t.TempDir(), Members: []string{recv.id}, Transient: true})
	grant := p.grant(p.self, "xfer-2", "", recv.id)
	for i := 0; i < 3; i++ {
		p.clk.Add(2 * time.Minute)
		if code, body := p.get(recv.id, "xfer-2", "walk", "", grant); code != 200 {
			t.Fatalf("an offer in use: %d %s", code, body)
		}
	}
	p.clk.Add(3*time.Minute + time.Second)
	if code, _ := p.get(recv.id, "xfer-2", "walk", "", grant); code != 404 {
		t.Errorf("an idle offer is still served: %d", code)
	}
	if _, err := p.reg.Get("xfer-2"); !errors.Is(err, ErrNoShare) {
		t.Errorf("an idle offer is still there: %v", err)
	}
}

// TestDropTransient: removing a device ends what was offered to it and
// the copies it asked for.
func TestDropTransient(t *testing.T) {
	p := newPool(t)
	alice, recv := newDevice(t), newDevice(t)
	p.roles[alice.id], p.roles[recv.id] = RoleMember, RoleMember
	p.reg.Add(Share{Name: "xfer-3", Path: t.TempDir(), Members: []string{recv.id}, Transient: true})
	p.reg.Add(Share{Name: "open", Path: t.TempDir()})
	running := p.grant(alice, "open", "", recv.id)
	p.get(recv.id, "open", "walk", "", running)
	p.clk.Add(GrantTTL + time.Minute) // past expiry, alive by use
	p.reg.DropTransient(recv.id)
	if _, err := p.reg.Get("xfer-3"); !errors.Is(err, ErrNoShare) {
		t.Errorf("the offer to a removed device remains: %v", err)
	}
	if code, _ := p.get(recv.id, "open", "walk", "", running); code == 200 {
		t.Errorf("a removed device's copy goes on")
	}
	if _, err := p.reg.Get("open"); err != nil {
		t.Errorf("a kept share was dropped: %v", err)
	}
}

// TestRefusedPaths: system directories, labpool's data directory, and
// any directory holding one are never shared.
func TestRefusedPaths(t *testing.T) {
	data := filepath.Join(t.TempDir(), "labpool")
	os.MkdirAll(filepath.Join(data, "blobs"), 0o700)
	cfg := DefaultConfig()
	cfg.DataDir = data
	r, err := OpenWith(cfg, &memStore{})
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "innocent")
	os.Symlink("/etc", link)
	refused := []struct{ path, names string }{
		{"/", "/"},
		{"/etc", "(/etc)"},
		{"/usr", "/usr"},
		{"/usr/share", "/usr"},
		{"/boot", "/boot"},
		{"/proc", "/proc"},
		{"/proc/self", "/proc"},
		{"/sys", "/sys"},
		{"/dev", "/dev"},
		{"/var", "/var"},
		{"/home", "/home"},
		{data, data},
		{filepath.Join(data, "blobs"), data},
		{filepath.Dir(data), data},
		{link, "/etc"},
	}
	for _, tt := range refused {
		if _, err := os.Stat(tt.path); err != nil {
			continue // not on this system
		}
		_, err := r.Add(Share{Name: "x", Path: tt.path, ReadWrite: true})
		if !errors.Is(err, ErrRefusedPath) || !strings.Contains(err.Error(), tt.names) || !strings.Contains(err.Error(), "refused: sharing ") {
			t.Errorf("share %s: %v; want a refusal naming %s", tt.path, err, tt.names)
		}
	}
	if _, err := r.Add(Share{Name: "ok", Path: t.TempDir()}); err != nil {
		t.Errorf("an ordinary directory: %v", err)
	}
	// A saved share that became a link to a system directory is refused at use.
	dir := t.TempDir()
	s := filepath.Join(dir, "s")
	os.Mkdir(s, 0o755)
	if _, err := r.Add(Share{Name: "swapped", Path: s}); err != nil {
		t.Fatal(err)
	}
	os.Remove(s)
	os.Symlink("/etc", s)
	if _, _, err := r.OpenRoot("swapped", "", false); !errors.Is(err, ErrRefusedPath) {
		t.Errorf("a share swapped for /etc opens: %v", err)
	}
	if _, _, err := r.Resolve("swapped"); !errors.Is(err, ErrRefusedPath) {
		t.Errorf("a share swapped for /etc resolves: %v", err)
	}
}

// TestMeasureBounded: the periodic measure of a share stops at its limit
// and says so.
func TestMeasureBounded(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "c"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
		for i := range 300 {
			os.WriteFile(filepath.Join(dir, d, strings.Repeat("f", 1+i%50)+string(rune('a'+i%26))+string(rune('a'+i/26))), []byte("x"), 0o644)
		}
	}
	root, _ := os.OpenRoot(dir)
	defer root.Close()
	if s := Measure(root, Limit{}); s.AtLeast || s.Files != 900 || s.Bytes != 900 {
		t.Errorf("unbounded measure = %+v; want 900 files of 1 byte", s)
	}
	if s := Measure(root, Limit{Entries: 10}); !s.AtLeast || s.Files >= 900 {
		t.Errorf("measure of at most 10 entries = %+v; want a partial count marked AtLeast", s)
	}
	if s := Measure(root, Limit{Time: time.Nanosecond}); !s.AtLeast {
		t.Errorf("measure of at most 1 ns = %+v; want AtLeast", s)
	}
}

func TestGrantRoundTrip(t *testing.T) {
	alice := newDevice(t)
	now := time.Unix(1_700_000_000, 0)
	enc, err := alice.signer().Grant("SRC", "data", "sub/dir", "RECV", now)
	if err != nil {
		t.Fatal(err)
	}
	g, err := DecodeGrant(enc)
	if err != nil {
		t.Fatal(err)
	}
	if g.Member() != alice.id || g.Src != "SRC" || g.Folder != "data" || g.Path != "sub/dir" || g.Receiver != "RECV" || !g.Expires.Equal(now.Add(GrantTTL)) {
		t.Errorf("decoded %+v", g)
	}
	if len(enc) > 400 {
		t.Errorf("a grant of %d characters; want a small header", len(enc))
	}
	raw := []byte(enc)
	for i := range raw {
		bad := append([]byte(nil), raw...)
		bad[i] ^= 1
		if _, err := DecodeGrant(string(bad)); err == nil {
			if g2, _ := DecodeGrant(string(bad)); g2.Member() != g.Member() || g2.Receiver != g.Receiver || g2.Src != g.Src || g2.Path != g.Path || g2.Folder != g.Folder || !g2.Expires.Equal(g.Expires) || g2.Nonce != g.Nonce {
				t.Errorf("flipping character %d gave another valid grant", i)
			}
		}
	}
	for _, s := range []string{"", "x", enc[:len(enc)-2], enc + "AA", strings.Repeat("A", 20000)} {
		if _, err := DecodeGrant(s); !errors.Is(err, ErrGrant) {
			t.Errorf("DecodeGrant(%.20q...) = %v", s, err)
		}
	}
}

func FuzzDecodeGrant(f *testing.F) {
	alice := newDevice(f)
	enc, _ := alice.signer().Grant("SRC", "data", "a/b", "RECV", time.Unix(1e9, 0))
	f.Add(enc)
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := DecodeGrant(s)
		if err != nil {
			if !errors.Is(err, ErrGrant) {
				t.Fatalf("error %v is not ErrGrant", err)
			}
			return
		}
		again, err := g.Encode()
		if err != nil {
			t.Fatalf("a decoded grant does not encode: %v", err)
		}
		if g2, err := DecodeGrant(again); err != nil || g2.Member() != g.Member() || g2.Path != g.Path {
			t.Fatalf("re-encoded grant: %+v, %v", g2, err)
		}
	})
}

// TestReceiverChecksTheAskingMember: the receiving machine writes into
// its folder for the member who asks, and only with that member's grant.
func TestReceiverChecksTheAskingMember(t *testing.T) {
	p := newPool(t)
	alice, bob, vera := newDevice(t), newDevice(t), newDevice(t)
	p.roles[alice.id], p.roles[bob.id], p.roles[vera.id] = RoleMember, RoleMember, RoleViewer
	p.reg.Add(Share{Name: "scratch", Path: t.TempDir(), ReadWrite: true, Members: []string{alice.id, vera.id}})
	p.reg.Add(Share{Name: "ro", Path: t.TempDir(), Members: []string{alice.id}})
	grantOf := func(d device) Grant {
		enc, _ := d.signer().Grant("SRC", "data", "", p.self.id, p.clk.Now())
		g, err := DecodeGrant(enc)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	caller := func(d device) Caller { return Caller{ID: d.id, Role: p.roles[d.id]} }
	if o, err := p.reg.OpenReceiving("scratch", caller(alice), grantOf(alice)); err != nil {
		t.Errorf("alice into her folder: %v", err)
	} else {
		o.Close()
	}
	tests := []struct {
		name   string
		folder string
		who    device
		signer device
		want   error
	}{
		{"bob, not on the member list", "scratch", bob, bob, ErrNotMember},
		{"a viewer", "scratch", vera, vera, ErrViewer},
		{"alice's grant relayed by bob", "scratch", bob, alice, ErrGrant},
		{"a read-only folder", "ro", alice, alice, ErrReadOnly},
	}
	for _, tt := range tests {
		if _, err := p.reg.OpenReceiving(tt.folder, caller(tt.who), grantOf(tt.signer)); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v; want %v", tt.name, err, tt.want)
		}
	}
	enc, _ := alice.signer().Grant("SRC", "data", "", bob.id, p.clk.Now())
	g, _ := DecodeGrant(enc)
	if _, err := p.reg.OpenReceiving("scratch", caller(alice), g); !errors.Is(err, ErrGrant) {
		t.Errorf("a grant naming another receiver: %v", err)
	}
}
