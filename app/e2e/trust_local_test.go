package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The local doors of issue 15: what reaches a machine from its own
// loopback. Each subtest is an attack that once passed.

// cookieCGI makes a page and a CGI that echoes the Cookie header the
// container's server received, and serves them on 8080 (busybox httpd).
const cookieCGI = `mkdir -p /tmp/w/cgi-bin && echo '<!doctype html><title>behind a tunnel</title><p>a container page</p>' > /tmp/w/index.html && ` +
	`printf '#!/bin/sh\nb="cookie=[$HTTP_COOKIE]"\necho "Content-Type: text/plain"\necho "Content-Length: $((${#b}+1))"\necho\necho "$b"\n' > /tmp/w/cgi-bin/cookie && ` +
	`chmod +x /tmp/w/cgi-bin/cookie && exec httpd -f -p 8080 -h /tmp/w`

// TestTrustLocalTunnelCookie: the user opens `labpool web` and, in the same
// Chromium, a container's page through `labpool open`. Cookies are scoped by
// host, not port: a tunnel on 127.0.0.1 handed the container the UI's
// secret (the full API). The tunnel is on another loopback address now, and
// neither the page's document.cookie nor its server's Cookie header holds
// the secret; `labpool web` refuses to listen on the tunnels' host.
func TestTrustLocalTunnelCookie(t *testing.T) {
	l := newLAN(t, "laptop")
	laptop := l.host("laptop")
	laptop.docker()
	const webAddr = "127.0.0.1:7421"
	printed := laptop.web(webAddr)
	laptop.waitDaemon()
	mustCLI(t, laptop, "pool", "create")
	id := trRun(t, laptop, "--port", "8080", "labpool-test/busybox:1", "sh", "-c", cookieCGI)
	trWaitJob(t, laptop, id, "running")
	tunnel := strings.TrimSpace(mustCLI(t, laptop, "open", id, "8080"))
	u, err := url.Parse(tunnel)
	if err != nil {
		t.Fatalf("open printed %q: %v", tunnel, err)
	}
	if h := u.Hostname(); h == "127.0.0.1" || h == "localhost" {
		t.Errorf("the tunnel %s is on the web UI's host", tunnel)
	}
	waitFor(t, 20*time.Second, "the CGI through the tunnel", func() error {
		_, body, err := curlE(laptop, "-H", "Cookie: probe=1", tunnel+"cgi-bin/cookie")
		if err != nil || !strings.Contains(body, "cookie=[probe=1]") {
			logs, _, _ := laptop.cli("logs", id)
			_, page, perr := curlE(laptop, tunnel)
			return fmt.Errorf("body %q %v (page %q %v; job's log %q)", body, err, page, perr, logs)
		}
		return nil
	})

	t.Run("chromium", func(t *testing.T) {
		res := tunnelBrowser(t, laptop, printed, tunnel)
		if res["leaked"] != false {
			t.Errorf("the page behind the tunnel saw the web UI's secret: %v", res)
		}
		for _, k := range []string{"documentCookie", "fetchedHeader", "navigatedHeader"} {
			if v := fmt.Sprint(res[k]); strings.Contains(v, "labpool_token") {
				t.Errorf("%s behind the tunnel: %q", k, v)
			}
		}
	})

	t.Run("web refuses the tunnels' host", func(t *testing.T) {
		_, errOut, code := laptop.cli("web", "--listen", u.Hostname()+":7422")
		if code == 0 || !strings.Contains(errOut, "rule: web_not_tunnel_host") {
			t.Errorf("web --listen %s:7422: exit %d %q; want a refusal naming the rule", u.Hostname(), code, errOut)
		}
	})
}

// tunnelBrowser runs e2e/tunnelcookie.mjs in h's namespace and returns its
// report.
func tunnelBrowser(t *testing.T, h *host, printed, tunnel string) map[string]any {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		skipOrFail(t, "browser test needs node")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		skipOrFail(t, "browser test needs Debian's chromium")
	}
	script := filepath.Join(repoRoot(), "frontend", "e2e", "tunnelcookie.mjs")
	cmd := exec.Command("ip", "netns", "exec", h.ns, "node", script, "--url", printed, "--tunnel", tunnel,
		"--screenshot", filepath.Join(artifacts(t), "tunnelcookie.png"))
	cmd.Dir = filepath.Join(repoRoot(), "frontend")
	out, err := cmd.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("playwright: %s", lines[len(lines)-1])
	var res map[string]any
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &res); jerr != nil || err != nil {
		t.Fatalf("tunnel cookie browser test: %v, report %q: %v", err, lines[len(lines)-1], jerr)
	}
	return res
}

// TestTrustLocalMetricsHost: a web page whose name an attacker points at
// 127.0.0.1 (DNS rebinding) reads the metrics endpoint with its own name in
// Host; it is refused naming the rule, while Prometheus on this machine,
// and with --metrics-allow-remote from another one by IP, host name or a
// --metrics-host name, still scrapes.
func TestTrustLocalMetricsHost(t *testing.T) {
	l := newLAN(t, "gpu1", "prom")
	gpu1, prom := l.host("gpu1"), l.host("prom")
	gpu1.env = append(gpu1.env, "LABPOOL_SIMULATE_GPUS=1")
	gpu1.start("agent", "--name", "gpu1", "--iface", "eth0", "--listen", ":7420", "--metrics", "127.0.0.1:9400")
	gpu1.waitDaemon()
	scrape := func(h *host, target string, args ...string) (int, string) {
		t.Helper()
		return curl(t, h, append(args, "http://"+target+"/metrics")...)
	}
	waitFor(t, 20*time.Second, "the metrics on loopback", func() error {
		if st, body, err := curlE(gpu1, "http://127.0.0.1:9400/metrics"); err != nil || st != 200 || !strings.Contains(body, "DCGM_FI_DEV_GPU_TEMP{") {
			return fmt.Errorf("%d %q %v", st, lastLines(body, 3), err)
		}
		return nil
	})
	for _, host := range []string{"localhost:9400", "[::1]:9400"} {
		if st, _ := scrape(gpu1, "127.0.0.1:9400", "-H", "Host: "+host); st != 200 {
			t.Errorf("Host %s on loopback: %d, want 200", host, st)
		}
	}
	for _, host := range []string{"rebind.example:9400", "gpu1:9400", gpu1.ip + ":9400"} {
		st, body := scrape(gpu1, "127.0.0.1:9400", "-H", "Host: "+host)
		if st != 421 || !strings.Contains(body, "refused: ") || !strings.Contains(body, "rule: metrics_host") || strings.Contains(body, "DCGM") {
			t.Errorf("Host %s on loopback: %d %.200q; want 421 naming rule metrics_host", host, st, body)
		}
	}
	if n := strings.Count(gpu1.logText(), "refused a metrics request"); n != 3 {
		t.Errorf("%d refusals logged, want 3 (one per Host)", n)
	}
	scrape(gpu1, "127.0.0.1:9400", "-H", "Host: rebind.example:9400")
	if n := strings.Count(gpu1.logText(), "refused a metrics request"); n != 3 {
		t.Errorf("a refusal logged again: %d, want 3", n)
	}

	gpu1.kill()
	gpu1.start("agent", "--name", "gpu1", "--iface", "eth0", "--listen", ":7420",
		"--metrics", "0.0.0.0:9400", "--metrics-allow-remote", "--metrics-host", "gpu1.lab.example")
	gpu1.waitDaemon()
	remote := gpu1.ip + ":9400"
	waitFor(t, 20*time.Second, "the metrics from another machine", func() error {
		if st, _, err := curlE(prom, "http://"+remote+"/metrics"); err != nil || st != 200 {
			return fmt.Errorf("status %d %v", st, err)
		}
		return nil
	})
	for _, host := range []string{"gpu1.lab.example:9400", "gpu1.lab.example", "localhost:9400"} {
		if st, _ := scrape(prom, remote, "-H", "Host: "+host); st != 200 {
			t.Errorf("Host %s with --metrics-allow-remote: %d, want 200", host, st)
		}
	}
	for _, host := range []string{"rebind.example:9400", "gpu1.lab.example.rebind.example:9400"} {
		if st, body := scrape(prom, remote, "-H", "Host: "+host); st != 421 || !strings.Contains(body, "rule: metrics_host") {
			t.Errorf("Host %s with --metrics-allow-remote: %d %.200q; want 421 naming the rule", host, st, body)
		}
	}
	_, errOut, code := gpu1.cli("agent", "--metrics", "127.0.0.1:9401", "--metrics-host", "gpu1.lab.example")
	if code != 2 || !strings.Contains(errOut, "--metrics-host needs --metrics-allow-remote") {
		t.Errorf("agent --metrics-host without --metrics-allow-remote: exit %d %q; want a usage error", code, errOut)
	}
}

// curlE is curl that returns a failure to connect as an error, for waitFor.
func curlE(h *host, args ...string) (int, string, error) {
	full := append([]string{"netns", "exec", h.ns, "curl", "-s", "-m", "5", "-w", "\n%{http_code}"}, args...)
	out, err := exec.Command("ip", full...).Output()
	if err != nil {
		return 0, "", fmt.Errorf("curl %v: %v", args, err)
	}
	s := strings.TrimRight(string(out), "\n")
	i := strings.LastIndex(s, "\n")
	var st int
	fmt.Sscan(s[i+1:], &st)
	return st, s[:max(i, 0)], nil
}
