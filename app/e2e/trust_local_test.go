//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
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

// recorder is a python3 HTTP server in a namespace that writes each request
// it gets ("METHOD PATH\nBODY") to a file of its directory and answers 204;
// a POST to /redirect is answered with a redirect to argv[4].
const recorder = `
import http.server, os, sys, itertools
n = itertools.count()
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        with open(os.path.join(sys.argv[3], '%06d.req' % next(n)), 'wb') as f:
            f.write(('%s %s\n' % (self.command, self.path)).encode() + body)
        if self.path == '/redirect':
            self.send_response(307)
            self.send_header('Location', sys.argv[4])
        else:
            self.send_response(204)
        self.end_headers()
    do_GET = do_POST
    def log_message(self, *a):
        pass
http.server.HTTPServer((sys.argv[1], int(sys.argv[2])), H).serve_forever()
`

// recorderOn starts a recorder on h at addr:port; it returns the folder of
// the requests.
func recorderOn(t *testing.T, h *host, addr string, port int, redirect string) string {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		skipOrFail(t, "the webhook test needs python3 for its servers")
	}
	dir := t.TempDir()
	cmd := exec.Command("ip", "netns", "exec", h.ns, "python3", "-c", recorder, addr, fmt.Sprint(port), dir, redirect)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, 10*time.Second, "the recorder on "+h.name, func() error {
		_, _, err := curlE(h, "http://"+net.JoinHostPort(addr, fmt.Sprint(port))+"/ready")
		return err
	})
	return dir
}

// requests are the requests a recorder got, in order.
func requests(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.req"))
	var out []string
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}

// TestTrustLocalWebhook: an admin's webhook URL once made every machine post
// to its own loopback, and follow a redirect there; viewers printed the URL.
// Now a machine refuses loopback at dial time and any redirect, naming the
// rule once in its log; a private address only where its own policy allows
// it, where a good URL is still posted to; its user can turn posting off;
// only owners' and admins' devices print the URL.
func TestTrustLocalWebhook(t *testing.T) {
	l := newLAN(t, "gpu1", "member", "viewer", "chat")
	gpu1, member, viewer, chat := l.host("gpu1"), l.host("member"), l.host("viewer"), l.host("chat")
	gpu1.env = append(gpu1.env, "LABPOOL_SIMULATE_GPUS=1")
	for _, h := range []*host{gpu1, member, viewer} {
		h.agent()
	}
	for _, h := range []*host{gpu1, member, viewer} {
		h.waitDaemon()
	}
	code := lastLine(mustCLI(t, gpu1, "pool", "create"))
	mustCLI(t, member, "pool", "join", code, gpu1.ip+":7420")
	mustCLI(t, viewer, "pool", "join", lastLine(mustCLI(t, gpu1, "pool", "invite", "--role", "viewer")), gpu1.ip+":7420")

	// The first request to /ready is the recorders' own.
	loop := recorderOn(t, gpu1, "127.0.0.1", 8098, "")
	chatDir := recorderOn(t, chat, "0.0.0.0", 8099, "http://127.0.0.1:8098/inside")
	inside := func() []string {
		var got []string
		for _, r := range requests(loop) {
			if !strings.HasPrefix(r, "GET /ready") {
				got = append(got, r)
			}
		}
		return got
	}

	// The alert that makes the posts: gpu-temp fires (simulated GPUs run at
	// 35-75 °C) and clears as its threshold moves.
	temp := func(threshold string, firing bool) {
		t.Helper()
		mustCLI(t, gpu1, "alerts", "set", "gpu-temp", "--threshold", threshold, "--for", "1s")
		waitFor(t, 30*time.Second, fmt.Sprintf("gpu-temp firing: %v", firing), func() error {
			as, err := gpu1.client().Alerts(context.Background(), 0)
			active := slices.ContainsFunc(as, func(a app.Alert) bool { return a.Rule == "gpu-temp" && a.Active() })
			if err == nil && active != firing {
				err = fmt.Errorf("alerts %+v", as)
			}
			return err
		})
	}
	setHook := func(url string) {
		t.Helper()
		if out := mustCLI(t, gpu1, "alerts", "webhook", url); !strings.Contains(out, "webhook set") {
			t.Fatalf("alerts webhook %s: %s", url, out)
		}
	}
	logged := func(what string) int { return strings.Count(gpu1.logText(), what) }

	t.Run("loopback refused at dial time, logged once", func(t *testing.T) {
		// By address it is refused when set; by a name that resolves to
		// loopback, when each machine dials it.
		_, errOut, code := gpu1.cli("alerts", "webhook", "http://127.0.0.1:8098/hook")
		if code == 0 || !strings.Contains(errOut, "rule: webhook_destination") {
			t.Errorf("alerts webhook http://127.0.0.1:8098/hook: exit %d %q; want a refusal naming the rule", code, errOut)
		}
		setHook("http://localhost:8098/hook")
		temp("10", true)
		waitFor(t, 20*time.Second, "the refusal in gpu1's log", func() error {
			if logged("rule: webhook_destination") == 0 {
				return fmt.Errorf("not logged")
			}
			return nil
		})
		temp("99", false)
		temp("10", true)
		if n := logged("rule: webhook_destination"); n != 1 {
			t.Errorf("the refusal was logged %d times, want once", n)
		}
		if strings.Contains(gpu1.logText(), "localhost:8098/hook") {
			t.Errorf("the log shows the webhook's URL")
		}
		if got := inside(); len(got) != 0 {
			t.Errorf("gpu1's loopback server got %q", got)
		}
	})

	t.Run("private address refused by default", func(t *testing.T) {
		setHook("http://" + chat.ip + ":8099/hook")
		temp("99", false)
		waitFor(t, 20*time.Second, "the refusal in gpu1's log", func() error {
			if logged("is a private address") == 0 {
				return fmt.Errorf("not logged")
			}
			return nil
		})
		if !strings.Contains(gpu1.logText(), "labpool policy --webhook-private allow") {
			t.Errorf("the refusal does not say how to allow private addresses")
		}
	})

	t.Run("allowed by policy, a good URL is posted to", func(t *testing.T) {
		out := mustCLI(t, gpu1, "policy", "--webhook-private", "allow")
		if !strings.Contains(out, "private addresses allowed") {
			t.Errorf("policy --webhook-private allow:\n%s", out)
		}
		temp("10", true)
		waitFor(t, 20*time.Second, "the post at the chat server", func() error {
			for _, r := range requests(chatDir) {
				if strings.HasPrefix(r, "POST /hook\n") && strings.Contains(r, `"state":"firing"`) {
					return nil
				}
			}
			return fmt.Errorf("requests %q", requests(chatDir))
		})
	})

	t.Run("redirect not followed", func(t *testing.T) {
		setHook("http://" + chat.ip + ":8099/redirect")
		temp("99", false)
		waitFor(t, 20*time.Second, "the refusal in gpu1's log", func() error {
			if logged("rule: webhook_no_redirect") == 0 {
				return fmt.Errorf("not logged")
			}
			return nil
		})
		if got := inside(); len(got) != 0 {
			t.Errorf("the redirect reached gpu1's loopback: %q", got)
		}
	})

	t.Run("viewer and member hear only that a webhook is set", func(t *testing.T) {
		hook := "http://" + chat.ip + ":8099/redirect"
		for _, h := range []*host{member, viewer} {
			waitFor(t, 20*time.Second, h.name+" hears a webhook is set", func() error {
				wh, err := h.client().AlertWebhook(context.Background())
				if err == nil && (!wh.Set || wh.URL != "") {
					err = fmt.Errorf("webhook %+v", wh)
				}
				return err
			})
			out := mustCLI(t, h, "alerts", "webhook")
			if strings.Contains(out, hook) || !strings.Contains(out, "a webhook is set") {
				t.Errorf("%s: alerts webhook: %q", h.name, out)
			}
		}
		if out := strings.TrimSpace(mustCLI(t, gpu1, "alerts", "webhook")); out != hook {
			t.Errorf("the owner's alerts webhook: %q, want %s", out, hook)
		}
	})

	t.Run("its user turns posting off", func(t *testing.T) {
		setHook("http://" + chat.ip + ":8099/hook")
		mustCLI(t, gpu1, "policy", "--webhook", "off")
		before := len(requests(chatDir))
		temp("10", true) // not posted
		mustCLI(t, gpu1, "policy", "--webhook", "on")
		temp("99", false) // posted: the one queue keeps the order, so a post of the firing would come first
		waitFor(t, 20*time.Second, "the clearing at the chat server", func() error {
			for _, r := range requests(chatDir)[before:] {
				if strings.Contains(r, `"state":"cleared"`) {
					return nil
				}
			}
			return fmt.Errorf("requests %q", requests(chatDir)[before:])
		})
		for _, r := range requests(chatDir)[before:] {
			if strings.Contains(r, `"state":"firing"`) {
				t.Errorf("posted while off: %q", r)
			}
		}
	})
}

// device is one member device of TestTrustLocalEvictions: a data directory
// whose agent runs in the crowd's namespace only while it joins and
// launches.
type device struct {
	*host
	id, short string
	job       string // its job on gpu1, "" for none
}

// TestTrustLocalEvictions: a removed device's jobs end on every machine.
// Past 64 pending removals the eviction queue dropped the rest silently,
// and a removal a machine had stored but not yet acted on when its agent
// stopped was never acted on. Here a member whose removal happens while
// gpu1's agent is down, one whose removal gpu1 stored while it could not
// stop containers (its Docker engine frozen) before it was killed, and 100
// removals pending at once behind an eviction held up by the frozen engine
// each have their jobs on gpu1 ended.
func TestTrustLocalEvictions(t *testing.T) {
	l := newLAN(t, "owner", "gpu1", "crowd")
	owner, gpu1, crowd := l.host("owner"), l.host("gpu1"), l.host("crowd")
	sock := gpu1.docker()
	owner.agent()
	gpu1.agent()
	owner.waitDaemon()
	gpu1.waitDaemon()
	mustCLI(t, owner, "pool", "create")
	code := lastLine(mustCLI(t, owner, "pool", "invite", "--role", "member", "--uses", "200", "--expires", "1h"))
	mustCLI(t, gpu1, "pool", "join", code, owner.ip+":7420")

	// Devices 0 and 1 for the agent that was down, 2 to 101 the 100
	// pending removals, of which the first (whose eviction the frozen
	// engine holds up), the 69th (past the 64 the queue once held) and the
	// last own a job on gpu1.
	const n = 102
	withJob := map[int]bool{0: true, 1: true, 2: true, 70: true, n - 1: true}
	devs := make([]*device, n)
	for i := range devs {
		name := fmt.Sprintf("d%03d", i)
		// Each device its own address: a machine's handshake budget is
		// per source address (sync/transport/admit.go).
		ip := crowd.ip[:strings.LastIndexByte(crowd.ip, '.')+1] + fmt.Sprint(101+i)
		l.ip("-n", crowd.ns, "addr", "add", ip+"/24", "dev", "eth0")
		h := &host{lan: l, name: name, ns: crowd.ns, ip: ip, data: filepath.Join(t.TempDir(), name)}
		t.Cleanup(h.kill)
		h.start("agent", "--name", name, "--iface", "eth0", "--listen", ip+":7420")
		h.waitDaemon()
		mustCLI(t, h, "pool", "join", code, owner.ip+":7420")
		self, err := h.client().Self(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		d := &device{host: h, id: self.ID, short: self.ShortID}
		if withJob[i] {
			waitFor(t, 30*time.Second, name+" launches on gpu1", func() error {
				out, errOut, code := h.cli("run", "--node", "gpu1", "labpool-test/busybox:1", "sleep", "100000")
				if code != 0 {
					return fmt.Errorf("exit %d: %s%s", code, out, errOut)
				}
				d.job = lastLine(out)
				return nil
			})
			trWaitJob(t, gpu1, d.job, "running")
		}
		h.kill()
		devs[i] = d
	}
	dockerd := dockerdPID(t, sock)
	freeze := func(t *testing.T, stop bool) {
		t.Helper()
		sig := syscall.SIGCONT
		if stop {
			sig = syscall.SIGSTOP
		}
		if err := syscall.Kill(dockerd, sig); err != nil {
			t.Fatalf("signal dockerd: %v", err)
		}
	}
	t.Cleanup(func() { syscall.Kill(dockerd, syscall.SIGCONT) })
	evicted := func(t *testing.T, d *device) {
		t.Helper()
		waitFor(t, 60*time.Second, d.name+"'s job evicted on gpu1", func() error {
			j, err := gpu1.client().Job(context.Background(), d.job)
			if err == nil && (j.State == "running" || j.Error != "owner removed from the pool") {
				err = fmt.Errorf("state %s, error %q", j.State, j.Error)
			}
			return err
		})
		running, _ := exec.Command("docker", "-H", sock, "ps", "-q", "--filter", "label=labpool.job="+d.job).Output()
		if strings.TrimSpace(string(running)) != "" {
			t.Errorf("%s's container still runs on gpu1", d.name)
		}
	}
	removedOn := func(h *host, d *device) bool {
		for _, line := range strings.Split(h.logText(), "\n") {
			if strings.Contains(line, "device removed from the pool") && strings.Contains(line, d.short) {
				return true
			}
		}
		return false
	}

	t.Run("removed while the agent was down", func(t *testing.T) {
		gpu1.kill()
		mustCLI(t, owner, "pool", "remove", devs[0].id)
		gpu1.agent()
		gpu1.waitDaemon()
		evicted(t, devs[0])
	})

	t.Run("stored but not acted on when the agent stopped", func(t *testing.T) {
		freeze(t, true)
		mustCLI(t, owner, "pool", "remove", devs[1].id)
		waitFor(t, 20*time.Second, "gpu1 stores the removal", func() error {
			if !removedOn(gpu1, devs[1]) {
				return fmt.Errorf("not yet")
			}
			return nil
		})
		gpu1.kill() // its eviction waits on the frozen engine
		freeze(t, false)
		if out, _ := exec.Command("docker", "-H", sock, "ps", "-q", "--filter", "label=labpool.job="+devs[1].job).Output(); len(out) == 0 {
			t.Fatalf("the job's container ended before the agent started again")
		}
		gpu1.agent()
		gpu1.waitDaemon()
		evicted(t, devs[1])
	})

	t.Run("100 pending removals", func(t *testing.T) {
		freeze(t, true)
		for _, d := range devs[2:] {
			mustCLI(t, owner, "pool", "remove", d.id)
		}
		waitFor(t, 30*time.Second, "gpu1 stores the 100 removals", func() error {
			for _, d := range devs[2:] {
				if !removedOn(gpu1, d) {
					return fmt.Errorf("%s not yet", d.name)
				}
			}
			return nil
		})
		freeze(t, false)
		for _, i := range []int{2, 70, n - 1} {
			evicted(t, devs[i])
		}
		if strings.Contains(gpu1.logText(), "eviction queue full") {
			t.Errorf("gpu1 dropped removals from its eviction queue")
		}
	})
}

// dockerdPID is the pid of the dockerd serving sock (unix://DIR/d.sock,
// as host.docker starts it).
func dockerdPID(t *testing.T, sock string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(strings.TrimPrefix(sock, "unix://")), "d.pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		t.Fatalf("dockerd pid %q: %v", b, err)
	}
	return pid
}
