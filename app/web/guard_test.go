package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
)

const (
	testToken = "s3cret-s3cret-s3cret-s3cret-s3cret-s3cret-s3"
	testPort  = 7421
	ownHost   = "127.0.0.1:7421"
	ownOrigin = "http://127.0.0.1:7421"
)

// guarded returns the guarded handler and a pointer that counts the calls
// that reached the handler behind it.
func guarded() (http.Handler, *int) {
	var reached int
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.WriteHeader(http.StatusOK)
	})
	cfg := web.GuardConfig{Token: testToken, Port: testPort, LocalOnly: []string{"/api/v1/policy"}}
	return web.Guard(inner, cfg), &reached
}

func TestGuard(t *testing.T) {
	cookie := web.GuardConfig{Port: testPort}.CookieName() + "=" + testToken
	tests := []struct {
		name                  string
		method, path, host    string
		origin, site, ctype   string
		bearer, cookie, query string
		want                  int
		wantCode              string
	}{
		// The secret.
		{name: "api without the secret", method: "GET", path: "/api/v1/pool", want: 401, wantCode: "unauthorized"},
		{name: "api with bearer", method: "GET", path: "/api/v1/pool", bearer: testToken, want: 200},
		{name: "api with cookie", method: "GET", path: "/api/v1/pool", cookie: cookie, want: 200},
		{name: "api with a wrong bearer", method: "GET", path: "/api/v1/pool", bearer: testToken + "x", want: 401, wantCode: "unauthorized"},
		{name: "api with a wrong cookie", method: "GET", path: "/api/v1/pool", cookie: "labpool_token_7421=nope", want: 401, wantCode: "unauthorized"},
		{name: "cookie of another port", method: "GET", path: "/api/v1/pool", cookie: "labpool_token_7422=" + testToken, want: 401, wantCode: "unauthorized"},
		{name: "api with the token in the query", method: "GET", path: "/api/v1/pool", query: testToken, want: 401, wantCode: "unauthorized"},
		{name: "events without the secret", method: "GET", path: "/api/v1/events", want: 401, wantCode: "unauthorized"},
		{name: "empty bearer", method: "GET", path: "/api/v1/pool", bearer: " ", want: 401, wantCode: "unauthorized"},
		{name: "ui files need no secret", method: "GET", path: "/assets/app.js", want: 200},
		{name: "ui page needs no secret", method: "GET", path: "/", want: 200},
		{name: "ui page with a stale token", method: "GET", path: "/", query: "old", want: 401},

		// The Host header (DNS rebinding).
		{name: "foreign host with secret", method: "GET", path: "/api/v1/pool", host: "evil.example:7421", bearer: testToken, want: 403, wantCode: "forbidden"},
		{name: "foreign host ui", method: "GET", path: "/", host: "evil.example:7421", want: 403, wantCode: "forbidden"},
		{name: "foreign host with token in query", method: "GET", path: "/", host: "evil.example:7421", query: testToken, want: 403, wantCode: "forbidden"},
		{name: "own host other port", method: "GET", path: "/api/v1/pool", host: "127.0.0.1:80", bearer: testToken, want: 403, wantCode: "forbidden"},
		{name: "own host no port", method: "GET", path: "/api/v1/pool", host: "127.0.0.1", bearer: testToken, want: 403, wantCode: "forbidden"},
		{name: "localhost", method: "GET", path: "/api/v1/pool", host: "localhost:7421", bearer: testToken, want: 200},
		{name: "ipv6 loopback", method: "GET", path: "/api/v1/pool", host: "[::1]:7421", bearer: testToken, want: 200},
		{name: "localhost subdomain", method: "GET", path: "/", host: "evil.localhost:7421", want: 403, wantCode: "forbidden"},
		{name: "empty host", method: "GET", path: "/", host: "-", want: 403, wantCode: "forbidden"},

		// Mutating calls: content type and origin.
		{name: "post json", method: "POST", path: "/api/v1/pool/create", ctype: "application/json", cookie: cookie, want: 200},
		{name: "post json charset", method: "POST", path: "/api/v1/pool/create", ctype: "application/json; charset=utf-8", cookie: cookie, want: 200},
		{name: "post text/plain", method: "POST", path: "/api/v1/pool/create", ctype: "text/plain", cookie: cookie, want: 415, wantCode: "unsupported_media_type"},
		{name: "post form", method: "POST", path: "/api/v1/pool/create", ctype: "application/x-www-form-urlencoded", cookie: cookie, want: 415, wantCode: "unsupported_media_type"},
		{name: "post without type", method: "POST", path: "/api/v1/pool/create", bearer: testToken, want: 415, wantCode: "unsupported_media_type"},
		{name: "delete without type", method: "DELETE", path: "/api/v1/jobs/x", bearer: testToken, want: 415, wantCode: "unsupported_media_type"},
		{name: "delete json", method: "DELETE", path: "/api/v1/jobs/x", ctype: "application/json", bearer: testToken, want: 200},
		{name: "put json", method: "PUT", path: "/api/v1/pool/members/x/role", ctype: "application/json", bearer: testToken, want: 200},
		{name: "post same origin", method: "POST", path: "/api/v1/pool/create", origin: ownOrigin, site: "same-origin", ctype: "application/json", cookie: cookie, want: 200},
		{name: "post foreign origin", method: "POST", path: "/api/v1/pool/create", origin: "http://evil.example", ctype: "application/json", cookie: cookie, want: 403, wantCode: "forbidden"},
		{name: "post foreign origin text", method: "POST", path: "/api/v1/pool/create", origin: "http://evil.example", ctype: "text/plain", cookie: cookie, want: 403, wantCode: "forbidden"},
		{name: "post other loopback port", method: "POST", path: "/api/v1/pool/create", origin: "http://127.0.0.1:8000", ctype: "application/json", bearer: testToken, want: 403, wantCode: "forbidden"},
		{name: "post localhost origin to 127 host", method: "POST", path: "/api/v1/pool/create", origin: "http://localhost:7421", ctype: "application/json", bearer: testToken, want: 403, wantCode: "forbidden"},
		{name: "post null origin", method: "POST", path: "/api/v1/pool/create", origin: "null", ctype: "application/json", bearer: testToken, want: 403, wantCode: "forbidden"},
		{name: "post cross-site", method: "POST", path: "/api/v1/pool/create", site: "cross-site", ctype: "application/json", cookie: cookie, want: 403, wantCode: "forbidden"},
		{name: "post same-site", method: "POST", path: "/api/v1/pool/create", site: "same-site", ctype: "application/json", cookie: cookie, want: 403, wantCode: "forbidden"},
		{name: "post site none", method: "POST", path: "/api/v1/pool/create", site: "none", ctype: "application/json", bearer: testToken, want: 200},
		{name: "post without the secret", method: "POST", path: "/api/v1/pool/create", ctype: "application/json", want: 401, wantCode: "unauthorized"},
		{name: "get cross-site", method: "GET", path: "/api/v1/pool", site: "cross-site", cookie: cookie, want: 403, wantCode: "forbidden"},
		{name: "get foreign origin", method: "GET", path: "/api/v1/pool", origin: "http://evil.example", bearer: testToken, want: 403, wantCode: "forbidden"},
		{name: "post to ui path", method: "POST", path: "/", ctype: "text/plain", want: 415, wantCode: "unsupported_media_type"},
		{name: "options passes", method: "OPTIONS", path: "/api/v1/pool/create", bearer: testToken, want: 200},

		// Local-only routes.
		{name: "policy over web", method: "GET", path: "/api/v1/policy", bearer: testToken, want: 403, wantCode: "local_only"},
		{name: "policy put over web", method: "PUT", path: "/api/v1/policy", ctype: "application/json", cookie: cookie, want: 403, wantCode: "local_only"},
		{name: "policy subpath", method: "GET", path: "/api/v1/policy/x", bearer: testToken, want: 403, wantCode: "local_only"},
		{name: "policy unclean path", method: "GET", path: "/api/v1/x/../policy", bearer: testToken, want: 403, wantCode: "local_only"},
		{name: "policy double slash", method: "GET", path: "/api/v1//policy", bearer: testToken, want: 403, wantCode: "local_only"},
		{name: "policy without secret", method: "GET", path: "/api/v1/policy", want: 401, wantCode: "unauthorized"},
		{name: "policy-like name", method: "GET", path: "/api/v1/policyx", bearer: testToken, want: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, reached := guarded()
			target := tt.path
			if tt.query != "" {
				target += "?token=" + tt.query
			}
			r := httptest.NewRequest(tt.method, target, nil)
			r.URL.Path = tt.path // keep unclean paths as sent
			r.Host = ownHost
			switch tt.host {
			case "":
			case "-":
				r.Host = ""
			default:
				r.Host = tt.host
			}
			set := func(k, v string) {
				if v != "" {
					r.Header.Set(k, v)
				}
			}
			set("Origin", tt.origin)
			set("Sec-Fetch-Site", tt.site)
			set("Content-Type", tt.ctype)
			set("Cookie", tt.cookie)
			if tt.bearer != "" {
				r.Header.Set("Authorization", "Bearer "+tt.bearer)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Fatalf("%s %s = %d %s; want %d", tt.method, target, w.Code, w.Body, tt.want)
			}
			if tt.want == 200 && *reached != 1 {
				t.Errorf("allowed request reached the handler %d times", *reached)
			}
			if tt.want != 200 && *reached != 0 {
				t.Errorf("refused request reached the handler")
			}
			if tt.wantCode != "" {
				var e app.Error
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Code != tt.wantCode || e.Message == "" {
					t.Errorf("body %q: want code %q with a message (%v)", w.Body, tt.wantCode, err)
				}
			}
		})
	}
}

// TestGuardTokenInQuery: the page load moves the token into a cookie and
// drops it from the address bar.
func TestGuardTokenInQuery(t *testing.T) {
	h, reached := guarded()
	r := httptest.NewRequest("GET", "/jobs?token="+testToken+"&tab=2", nil)
	r.Host = ownHost
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusSeeOther && w.Code != http.StatusFound {
		t.Fatalf("page load with the token: %d %s; want a redirect", w.Code, w.Body)
	}
	if *reached != 0 {
		t.Errorf("the redirect reached the handler")
	}
	if loc := w.Header().Get("Location"); loc != "/jobs?tab=2" {
		t.Errorf("Location = %q; want /jobs?tab=2", loc)
	}
	res := w.Result()
	var c *http.Cookie
	for _, rc := range res.Cookies() {
		if rc.Name == (web.GuardConfig{Port: testPort}).CookieName() {
			c = rc
		}
	}
	if c == nil {
		t.Fatalf("no token cookie in %q", res.Header.Values("Set-Cookie"))
	}
	if c.Value != testToken || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		t.Errorf("cookie %+v: want the token, HttpOnly, SameSite=Strict, Path=/", c)
	}
	if !strings.Contains(res.Header.Get("Cache-Control"), "no-store") {
		t.Errorf("the redirect may be cached: Cache-Control %q", res.Header.Get("Cache-Control"))
	}

	// The cookie then opens the API.
	r = httptest.NewRequest("GET", "/api/v1/pool", nil)
	r.Host = ownHost
	r.AddCookie(c)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Errorf("api with the cookie from the redirect: %d %s", w.Code, w.Body)
	}
}

// TestGuardHosts: the listen host is allowed besides the loopback names.
func TestGuardHosts(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	h := web.Guard(inner, web.GuardConfig{Token: testToken, Port: 9000, Hosts: []string{"127.0.0.5"}})
	for host, want := range map[string]int{
		"127.0.0.5:9000": 200, "127.0.0.1:9000": 200, "LOCALHOST:9000": 200, "[::1]:9000": 200,
		"127.0.0.5:7421": 403, "10.0.0.1:9000": 403, "[::2]:9000": 403,
	} {
		r := httptest.NewRequest("GET", "/api/v1/self", nil)
		r.Host = host
		r.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %s: %d; want %d", host, w.Code, want)
		}
	}
}

func TestGuardNoToken(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	h := web.Guard(inner, web.GuardConfig{Port: testPort})
	r := httptest.NewRequest("GET", "/api/v1/self", nil)
	r.Host = ownHost
	r.Header.Set("Authorization", "Bearer ")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("an empty configured token let an empty bearer in: %d", w.Code)
	}
}

func TestNewToken(t *testing.T) {
	a, err := web.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := web.NewToken()
	if a == b || len(a) < 43 {
		t.Errorf("tokens %q, %q: want two different ones of 32 random bytes", a, b)
	}
	if strings.ContainsAny(a, "+/=?&#%") {
		t.Errorf("token %q is not URL-safe", a)
	}
}

func TestGuardRedirectStaysHere(t *testing.T) {
	h, _ := guarded()
	r := httptest.NewRequest("GET", "/?token="+testToken, nil)
	r.URL.Path = "//evil.example/x/"
	r.Host = ownHost
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if loc := w.Header().Get("Location"); loc != "/evil.example/x/" {
		t.Errorf("Location = %q; want a path on this server", loc)
	}
}
