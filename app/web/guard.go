package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// GuardConfig is what Guard lets through to the local API over loopback TCP.
type GuardConfig struct {
	// Token is this run's secret (NewToken). Every /api/ call must carry it
	// as "Authorization: Bearer TOKEN" or in the cookie set by the page load
	// with ?token=TOKEN. An empty Token lets no /api/ call in.
	Token string
	// Port is the TCP port the server listens on; the Host header must name
	// it.
	Port int
	// Hosts are host names or IPs (without port) accepted in the Host header
	// besides 127.0.0.1, localhost and ::1: the host the server listens on.
	Hosts []string
	// LocalOnly are path prefixes served only on the unix socket
	// (for example "/api/v1/policy"): refused with 403 "local_only".
	LocalOnly []string
}

// CookieName is the name of the cookie that carries the token. It names the
// port: browsers share cookies between ports of one host, and two servers
// on different ports must not overwrite each other's.
func (c GuardConfig) CookieName() string {
	return "labpool_token_" + strconv.Itoa(c.Port)
}

// NewToken returns a fresh secret: 32 random bytes, base64url without padding.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make web token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// Guard wraps h, the UI and local API served on loopback TCP, against other
// web pages and other local users:
//
//   - a Host header that is not a loopback name with cfg.Port is refused
//     (403, DNS rebinding), on every path;
//   - an /api/ call, or any call that is not GET, HEAD or OPTIONS, with a
//     foreign Origin or "Sec-Fetch-Site: cross-site" or "same-site" is
//     refused (403);
//   - a call that is not GET, HEAD or OPTIONS needs
//     "Content-Type: application/json" (415): a form or text/plain body is
//     what a page can send elsewhere without asking;
//   - an /api/ call needs the token (401);
//   - the cfg.LocalOnly paths are refused (403 "local_only").
//
// A GET of the UI with ?token=TOKEN sets an HttpOnly, SameSite=Strict cookie
// and redirects to the same address without the token.
func Guard(h http.Handler, cfg GuardConfig) http.Handler {
	g := &guard{next: h, cfg: cfg, hosts: map[string]bool{}}
	port := strconv.Itoa(cfg.Port)
	for _, host := range append([]string{"127.0.0.1", "localhost", "::1"}, cfg.Hosts...) {
		g.hosts[strings.ToLower(net.JoinHostPort(host, port))] = true
	}
	g.sum = sha256.Sum256([]byte(cfg.Token))
	return g
}

type guard struct {
	next  http.Handler
	cfg   GuardConfig
	hosts map[string]bool // allowed Host headers, lowercase, with port
	sum   [32]byte        // sha256 of cfg.Token
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if !g.hosts[strings.ToLower(r.Host)] {
		writeError(w, http.StatusForbidden, "forbidden", fmt.Sprintf(
			"host %q is not this server: open http://127.0.0.1:%d/ (a foreign Host header is how DNS rebinding reaches loopback)", r.Host, g.cfg.Port))
		return
	}
	p := path.Clean("/" + r.URL.Path)
	api := p == "/api" || strings.HasPrefix(p, "/api/")
	mutating := r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions
	if api || mutating {
		if why := g.crossSite(r); why != "" {
			writeError(w, http.StatusForbidden, "forbidden", "cross-site request refused: "+why)
			return
		}
	}
	if mutating && !isJSON(r.Header.Get("Content-Type")) {
		writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type",
			"a call that changes something needs Content-Type: application/json")
		return
	}
	if !api {
		g.page(w, r, p)
		return
	}
	if !g.authorized(r) {
		writeError(w, http.StatusUnauthorized, "unauthorized",
			"the local API over TCP needs this run's token: open the URL that `labpool web` printed, or send Authorization: Bearer TOKEN")
		return
	}
	for _, prefix := range g.cfg.LocalOnly {
		if p == prefix || strings.HasPrefix(p, strings.TrimSuffix(prefix, "/")+"/") {
			writeError(w, http.StatusForbidden, "local_only",
				p+" is served only on the local unix socket (the labpool CLI), never over the web UI")
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

// crossSite says why r comes from another site, or "" when it does not.
func (g *guard) crossSite(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "cross-site", "same-site":
		return "Sec-Fetch-Site: " + site
	}
	if origin := r.Header.Get("Origin"); origin != "" && origin != "http://"+r.Host {
		return fmt.Sprintf("origin %q is not http://%s", origin, r.Host)
	}
	return ""
}

// authorized reports whether r carries the token in its Authorization
// header or its cookie, comparing in constant time.
func (g *guard) authorized(r *http.Request) bool {
	if g.cfg.Token == "" {
		return false
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, tok, ok := strings.Cut(auth, " ")
		return ok && strings.EqualFold(scheme, "Bearer") && g.is(strings.TrimSpace(tok))
	}
	c, err := r.Cookie(g.cfg.CookieName())
	return err == nil && g.is(c.Value)
}

// is compares tok with the token in constant time (hashes of equal length,
// so not even the length leaks).
func (g *guard) is(tok string) bool {
	sum := sha256.Sum256([]byte(tok))
	return g.cfg.Token != "" && subtle.ConstantTimeCompare(sum[:], g.sum[:]) == 1
}

// page serves the UI's files; a GET with ?token= moves the token into the
// cookie and redirects to the address without it.
// p is r's path, cleaned.
func (g *guard) page(w http.ResponseWriter, r *http.Request, p string) {
	q := r.URL.Query()
	if !q.Has("token") || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		g.next.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	if !g.is(q.Get("token")) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintln(w, "This link's token is not the current one: `labpool web` makes a new one each time it starts. Open the URL it printed last.")
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: g.cfg.CookieName(), Value: g.cfg.Token, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
	q.Del("token")
	if strings.HasSuffix(r.URL.Path, "/") && p != "/" {
		p += "/"
	}
	// The cleaned path: "//evil.example" must not become a redirect to
	// another host.
	to := url.URL{Path: p, RawQuery: q.Encode()}
	http.Redirect(w, r, to.String(), http.StatusSeeOther)
}

// isJSON reports whether a Content-Type header is application/json.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
