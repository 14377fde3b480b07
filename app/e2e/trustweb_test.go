//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// webURLLine is the URL `labpool web` prints as its last line.
var webURLLine = regexp.MustCompile(`^http://127\.0\.0\.1:7421/\?token=[A-Za-z0-9_-]{43}$`)

// TestTrustWeb attacks `labpool web` as a web page the user opens and as a
// script without the token would: nothing gets through but the printed URL.
func TestTrustWeb(t *testing.T) {
	l := newLAN(t, "laptop")
	laptop := l.host("laptop")
	// A data directory another user could read, left by an older labpool.
	if err := os.MkdirAll(laptop.data, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(laptop.data, 0o755)
	os.WriteFile(filepath.Join(laptop.data, "agent.log"), []byte("old\n"), 0o644)
	os.Chmod(filepath.Join(laptop.data, "agent.log"), 0o644)

	const webAddr = "127.0.0.1:7421"
	first := laptop.web(webAddr)
	laptop.waitDaemon()
	if !webURLLine.MatchString(first) {
		t.Fatalf("printed URL %q; want http://127.0.0.1:7421/?token=SECRET", first)
	}
	if strings.Count(laptop.logText(), tokenOf(t, first)) != 1 {
		t.Errorf("the token appears elsewhere in the output:\n%s", laptop.logText())
	}

	t.Run("data directory is the owner's", func(t *testing.T) {
		checkDataModes(t, laptop.data)
		if !strings.Contains(laptop.logText(), "tightened the data directory") {
			t.Errorf("the log does not say the data directory was tightened")
		}
	})

	t.Run("curl", func(t *testing.T) {
		token := tokenOf(t, first)
		base := "http://" + webAddr
		bearer := "Authorization: Bearer " + token
		json := "Content-Type: application/json"
		for _, c := range []struct {
			name     string
			args     []string
			want     int
			wantCode string
		}{
			{"no token", []string{base + "/api/v1/pool"}, 401, "unauthorized"},
			{"token in the API query", []string{base + "/api/v1/pool?token=" + token}, 401, "unauthorized"},
			{"wrong token", []string{"-H", bearer + "x", base + "/api/v1/pool"}, 401, "unauthorized"},
			{"bearer", []string{"-H", bearer, base + "/api/v1/pool"}, 200, ""},
			{"rebinding host", []string{"-H", "Host: evil.example:7421", "-H", bearer, base + "/api/v1/pool"}, 403, "forbidden"},
			{"rebinding host ui", []string{"-H", "Host: evil.example:7421", base + "/"}, 403, "forbidden"},
			{"the seen attack", []string{"-X", "POST", "-H", "Origin: http://evil.example", "-H", "Content-Type: text/plain", "-d", "{}", base + "/api/v1/pool/create"}, 403, "forbidden"},
			{"text/plain with token", []string{"-X", "POST", "-H", bearer, "-H", "Content-Type: text/plain", "-d", "{}", base + "/api/v1/pool/create"}, 415, "unsupported_media_type"},
			{"foreign origin with token", []string{"-X", "POST", "-H", bearer, "-H", json, "-H", "Origin: http://evil.example", "-d", "{}", base + "/api/v1/pool/create"}, 403, "forbidden"},
			{"cross-site with token", []string{"-X", "POST", "-H", bearer, "-H", json, "-H", "Sec-Fetch-Site: cross-site", "-d", "{}", base + "/api/v1/pool/create"}, 403, "forbidden"},
			{"policy over web", []string{"-H", bearer, base + "/api/v1/policy"}, 403, "local_only"},
			{"delete without type", []string{"-X", "DELETE", "-H", bearer, base + "/api/v1/folders/x"}, 415, "unsupported_media_type"},
			{"ui without token", []string{base + "/"}, 200, ""},
		} {
			st, body := curl(t, laptop, c.args...)
			if st != c.want {
				t.Errorf("%s: %d %s; want %d", c.name, st, body, c.want)
				continue
			}
			if c.wantCode != "" && !strings.Contains(body, `"code":"`+c.wantCode+`"`) {
				t.Errorf("%s: body %s; want code %q", c.name, body, c.wantCode)
			}
		}
		if p, err := laptop.client().Pool(context.Background()); err != nil || p.PoolID != "" {
			t.Errorf("a refused call created a pool: %+v %v", p, err)
		}

		// The page load moves the token into a cookie.
		out, err := exec.Command("ip", "netns", "exec", laptop.ns, "curl", "-s", "-D", "-", "-o", "/dev/null", base+"/?token="+token).CombinedOutput()
		if err != nil {
			t.Fatalf("curl: %v %s", err, out)
		}
		head := strings.ToLower(string(out))
		for _, want := range []string{"303 see other", "location: /\r\n", "set-cookie: labpool_token_7421=" + strings.ToLower(token), "httponly", "samesite=strict", "path=/"} {
			if !strings.Contains(head, want) {
				t.Errorf("page load with the token: no %q in\n%s", want, out)
			}
		}
		st, _ := curl(t, laptop, "-H", "Cookie: labpool_token_7421="+token, base+"/api/v1/self")
		if st != 200 {
			t.Errorf("the API with the cookie: %d", st)
		}
	})

	t.Run("listen stays on loopback", func(t *testing.T) {
		for _, addr := range []string{"0.0.0.0:7422", laptop.ip + ":7422", ":7422", "[::]:7422"} {
			_, errOut, code := laptop.cli("web", "--listen", addr)
			if code == 0 || !strings.Contains(errOut, "loopback") {
				t.Errorf("web --listen %s: exit %d %q; want a refusal naming loopback", addr, code, errOut)
			}
		}
	})

	t.Run("browser", func(t *testing.T) {
		res := trustBrowser(t, laptop, first, "trustweb.png")
		t.Logf("attacks: %v", res["attacks"])
		if p, err := laptop.client().Pool(context.Background()); err != nil || p.PoolID != "" {
			t.Fatalf("the attacks created a pool: %+v %v", p, err)
		}
		fs, err := laptop.client().Folders(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			if f.Name == "root" {
				t.Errorf("the attacks shared a folder: %+v", f)
			}
		}
		// The UI's own mutating call (POST without a body) still passes.
		trustBrowser(t, laptop, first, "trustweb-create.png", "--create")
		waitFor(t, 5*time.Second, "the pool the UI created", func() error {
			p, err := laptop.client().Pool(context.Background())
			if err != nil || p.PoolID == "" {
				return fmt.Errorf("no pool (%v)", err)
			}
			return nil
		})
	})

	t.Run("a new token at each start", func(t *testing.T) {
		laptop.kill()
		second := laptop.web(webAddr)
		laptop.waitDaemon()
		if second == first || !webURLLine.MatchString(second) {
			t.Fatalf("restarted web printed %q (before %q)", second, first)
		}
		waitFor(t, 10*time.Second, "the new web answering", func() error {
			if st, _ := curl(t, laptop, "-H", "Authorization: Bearer "+tokenOf(t, second), "http://"+webAddr+"/api/v1/self"); st != 200 {
				return fmt.Errorf("status %d", st)
			}
			return nil
		})
		if st, _ := curl(t, laptop, "-H", "Authorization: Bearer "+tokenOf(t, first), "http://"+webAddr+"/api/v1/self"); st != 401 {
			t.Errorf("the old token still opens the API: %d", st)
		}
	})
}

func tokenOf(t *testing.T, printed string) string {
	t.Helper()
	u, err := url.Parse(printed)
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("printed URL %q has no token", printed)
	}
	return u.Query().Get("token")
}

// curl runs curl with args in h's namespace and returns the status and body.
func curl(t *testing.T, h *host, args ...string) (int, string) {
	t.Helper()
	full := append([]string{"netns", "exec", h.ns, "curl", "-s", "-m", "5", "-w", "\n%{http_code}"}, args...)
	out, err := exec.Command("ip", full...).Output()
	if err != nil {
		t.Fatalf("curl %v: %v", args, err)
	}
	s := strings.TrimRight(string(out), "\n")
	i := strings.LastIndex(s, "\n")
	var st int
	fmt.Sscan(s[i+1:], &st)
	return st, s[:max(i, 0)]
}

// checkDataModes stats every file in a data directory: the directory 0700,
// every file 0600 (the socket too).
func checkDataModes(t *testing.T, dir string) {
	t.Helper()
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v; want 0700", dir, info.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		seen[e.Name()] = true
		if info.IsDir() {
			if info.Mode().Perm()&0o077 != 0 {
				t.Errorf("%s: mode %v; want no access for others", e.Name(), info.Mode())
			}
			continue
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v; want 0600", e.Name(), info.Mode())
		}
	}
	for _, name := range []string{"replica.db", "replica.db-wal", "key.pem", "cert.pem", "labpool.sock", "agent.log"} {
		if !seen[name] {
			t.Errorf("no %s in the data directory (%v)", name, seen)
		}
	}
}

// trustBrowser runs e2e/trustweb.mjs in h's namespace and returns its report.
func trustBrowser(t *testing.T, h *host, printed, shot string, args ...string) map[string]any {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "browser test needs node")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		skipOrFail(t, "browser test needs Debian's chromium")
	}
	script := filepath.Join(repoRoot(), "frontend", "e2e", "trustweb.mjs")
	full := append([]string{"netns", "exec", h.ns, "node", script, "--url", printed,
		"--screenshot", filepath.Join(artifacts(t), shot)}, args...)
	cmd := exec.Command("ip", full...)
	cmd.Dir = filepath.Join(repoRoot(), "frontend")
	out, err := cmd.CombinedOutput()
	t.Logf("playwright: %s", strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("browser trust test: %v", err)
	}
	var res map[string]any
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("playwright report %q: %v", lines[len(lines)-1], err)
	}
	return res
}
