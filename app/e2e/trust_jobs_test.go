//go:build linux

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/jobs"
)

// TestTrustJobs is issue 15's audit, replayed with real agents in network
// namespaces and a real dockerd: jobs cannot reach each other or the
// agent, nobody replaces an image tag, and only who may act on a job reads
// its command line.
func TestTrustJobs(t *testing.T) {
	l := newLAN(t, "lab1", "alice", "bob", "viewer")
	lab1, alice, bob, viewer := l.host("lab1"), l.host("alice"), l.host("bob"), l.host("viewer")
	lab1.env = append(lab1.env, "LABPOOL_SIMULATE_GPUS=1")
	dk := lab1.docker()
	for _, h := range l.hosts {
		h.agent()
	}
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	code := lastLine(mustCLI(t, lab1, "pool", "create"))
	viewerCode := lastLine(mustCLI(t, lab1, "pool", "invite", "--role", "viewer", "--uses", "1", "--expires", "1h"))
	for h, c := range map[*host]string{alice: code, bob: code, viewer: viewerCode} {
		if out, errOut, code := h.cli("pool", "join", c, lab1.ip+":7420"); code != 0 {
			t.Fatalf("%s: pool join: exit %d: %s%s", h.name, code, out, errOut)
		}
	}
	for _, h := range []*host{alice, bob, viewer} {
		waitFor(t, 20*time.Second, h.name+" follows lab1", func() error { return liveNodes(h, "lab1") })
	}
	const img = "labpool-test/busybox:1"
	const secret = "hf_s3cret_token_of_alice"

	// Alice's notebook: a page on port 8080, and a token on its command line.
	nb := trRun(t, alice, "--node", "lab1", "--port", "8080", img, "sh", "-c", "httpd -f -p 8080 -h /www # "+secret)
	trWaitJob(t, alice, nb, "running")
	nbAddr := containerAddr(t, dk, nb)

	t.Run("a job reaches no other member's job", func(t *testing.T) {
		out := probe(t, bob, fmt.Sprintf("printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 %s 8080", nbAddr))
		if strings.Contains(out, "labpool test page") {
			t.Errorf("bob's job read alice's notebook at %s:8080:\n%s", nbAddr, out)
		}
		// Nor alice's own second job.
		out = probe(t, alice, fmt.Sprintf("printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 %s 8080", nbAddr))
		if strings.Contains(out, "labpool test page") {
			t.Errorf("a job read another job of the same owner at %s:8080:\n%s", nbAddr, out)
		}
	})

	t.Run("a job reaches no labpool port of its host", func(t *testing.T) {
		script := fmt.Sprintf(`gw=$(ip route | awk '/default/ {print $3}')
for a in %s $gw; do echo x | nc -w 3 $a 7420 >/dev/null 2>&1 && echo "reached $a:7420" || echo "refused $a:7420"; done
echo x | nc -w 3 %s 7420 >/dev/null 2>&1 && echo "reached the LAN" || echo "no LAN"`, lab1.ip, alice.ip)
		out := probe(t, bob, script)
		if strings.Contains(out, "reached "+lab1.ip) || strings.Contains(out, "reached 172.") {
			t.Errorf("a job reached its host's labpool port:\n%s", out)
		}
		// The control: the same probe reaches another machine of the LAN
		// (the default policy, outside), so the refusals above are real.
		if !strings.Contains(out, "reached the LAN") {
			t.Errorf("a job under the default policy reached no LAN machine either:\n%s", out)
		}
	})

	t.Run("the machine's policy isolates jobs from the LAN too", func(t *testing.T) {
		mustCLI(t, lab1, "policy", "--job-network", "isolated")
		defer mustCLI(t, lab1, "policy", "--job-network", "outside")
		if out := mustCLI(t, lab1, "policy"); !regexp.MustCompile(`job network\s+isolated`).MatchString(out) {
			t.Errorf("policy shows:\n%s", out)
		}
		out := probe(t, bob, fmt.Sprintf(`echo x | nc -w 3 %s 7420 >/dev/null 2>&1 && echo "reached the LAN" || echo "no LAN"`, alice.ip))
		if !strings.Contains(out, "no LAN") {
			t.Errorf("an isolated job reached the LAN:\n%s", out)
		}
		// Its tunnels still work.
		web := trRun(t, bob, "--node", "lab1", "--port", "8080", img, "httpd", "-f", "-p", "8080", "-h", "/www")
		trWaitJob(t, bob, web, "running")
		defer bob.cli("rm", "--force", web)
		tunnelGet(t, bob, web)
		_, errOut, code := lab1.cli("policy", "--job-network", "bridge")
		refusedNaming(t, "job network bridge", "", errOut, code, `job network "bridge"`)
	})

	t.Run("a tunnel to a job still works", func(t *testing.T) {
		tunnelGet(t, alice, nb)
		if ports, _ := exec.Command("docker", "-H", dk, "port", containerOf(t, dk, nb)).CombinedOutput(); strings.TrimSpace(string(ports)) != "" {
			t.Errorf("the job publishes ports on its host: %s", ports)
		}
	})

	t.Run("a viewer reads no other's command line", func(t *testing.T) {
		for _, h := range []*host{viewer, bob} {
			j, err := h.client().Job(context.Background(), nb)
			if err != nil {
				t.Fatalf("%s: job: %v", h.name, err)
			}
			if strings.Contains(strings.Join(j.Spec.Cmd, " "), secret) || !j.CmdWithheld {
				t.Errorf("%s reads alice's command line %q (withheld %v)", h.name, j.Spec.Cmd, j.CmdWithheld)
			}
			if out := mustCLI(t, h, "ps", "--json"); strings.Contains(out, secret) || !strings.Contains(out, `"cmd_withheld": true`) {
				t.Errorf("%s: ps --json shows the command line or does not say it is withheld:\n%s", h.name, out)
			}
		}
		for _, h := range []*host{alice, lab1} {
			if j, err := h.client().Job(context.Background(), nb); err != nil || !strings.Contains(strings.Join(j.Spec.Cmd, " "), secret) {
				t.Errorf("%s, who may act on the job, reads %q, %v; want its command line", h.name, j.Spec.Cmd, err)
			}
		}
		if f := grepData(t, viewer, secret); f != "" {
			t.Errorf("the viewer's %s holds alice's command line", f)
		}
	})

	t.Run("a symlinked manifest moves no tag", func(t *testing.T) {
		before := imageID(t, dk, img)
		dir := t.TempDir()
		evil, linked := filepath.Join(dir, "evil.tar"), filepath.Join(dir, "linked.tar")
		forgedImage(t, dk, evil, img)
		linkManifest(t, evil, linked)
		out, errOut, code := bob.cli("image", "load", "lab1", linked)
		refusedNaming(t, "an archive whose manifest.json is a symlink", out, lastLine(errOut), code, "(rule: an archive's manifest.json")
		if after := imageID(t, dk, img); after != before {
			t.Errorf("the tag %s moved from %s to %s", img, before, after)
			exec.Command("docker", "-H", dk, "tag", before, img).Run()
		}
	})

	t.Run("an archive naming an existing tag replaces nothing", func(t *testing.T) {
		before := imageID(t, dk, img)
		evil := filepath.Join(t.TempDir(), "evil.tar")
		forgedImage(t, dk, evil, img)
		out, errOut, code := bob.cli("image", "load", "lab1", evil)
		refusedNaming(t, "an archive tagged "+img, out, lastLine(errOut), code, "(rule: a member loads images only under member/")
		if after := imageID(t, dk, img); after != before {
			t.Errorf("the tag %s moved from %s to %s", img, before, after)
			exec.Command("docker", "-H", dk, "tag", before, img).Run()
		}
	})

	t.Run("a member squats no Docker Hub or registry name", func(t *testing.T) {
		// Audit finding 3: the README's own example image, loaded by bob,
		// would run for alice with her -e HF_TOKEN.
		for _, squat := range []string{"pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", "registry.example:5000/nvidia/pytorch:24.05-py3"} {
			archive := filepath.Join(t.TempDir(), "squat.tar")
			forgedImage(t, dk, archive, squat)
			out, errOut, code := bob.cli("image", "load", "lab1", archive)
			refusedNaming(t, "a member's load of "+squat, out, lastLine(errOut), code, "(rule: a member loads images only under member/")
			if out, err := exec.Command("docker", "-H", dk, "image", "inspect", squat).CombinedOutput(); err == nil {
				t.Errorf("the squatted name exists after the refusal: %.200s", out)
			}
			// The machine's own user may.
			mustCLI(t, lab1, "image", "load", "lab1", archive)
			if imageID(t, dk, squat) == "" {
				t.Errorf("the machine's owner could not load %s", squat)
			}
			exec.Command("docker", "-H", dk, "rmi", "-f", squat).Run()
		}
		// Under his own prefix bob loads; images names him, and alice's
		// launch of bob's image says whose it is.
		own := memberPrefix(t, bob) + "tool:1"
		archive := filepath.Join(t.TempDir(), "own.tar")
		forgedImage(t, dk, archive, own)
		mustCLI(t, bob, "image", "load", "lab1", archive)
		if out := mustCLI(t, alice, "images", "--node", "lab1"); !regexp.MustCompile(regexp.QuoteMeta(own) + `.*\sbob\s*$`).MatchString(strings.Join(grepLines(out, own), "\n")) {
			t.Errorf("images does not say bob loaded %s:\n%s", own, out)
		}
		_, errOut, _ := alice.cli("run", "--node", "lab1", own, "true")
		if !strings.Contains(errOut, "warning: "+own+" on lab1 is an image that bob loaded onto that machine") {
			t.Errorf("alice's run of bob's image warned nothing naming bob: %q", errOut)
		}
	})

	t.Run("the guard's jumps come first in FORWARD", func(t *testing.T) {
		// Audit finding 14: Docker's per-bridge ACCEPTs went above them at
		// each job network it made. A launch just made one.
		out, err := exec.Command("ip", "netns", "exec", lab1.ns, "iptables", "-w", "-S", "FORWARD").CombinedOutput()
		if err != nil {
			t.Fatalf("iptables -S FORWARD: %v: %s", err, out)
		}
		var rules []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.HasPrefix(l, "-A FORWARD ") {
				rules = append(rules, l)
			}
		}
		want := []string{"-A FORWARD -i lpi+ -j LABPOOL-JOBS-FWD", "-A FORWARD -i lpo+ -j LABPOOL-JOBS-FWD", "-A FORWARD -i lph+ -j LABPOOL-JOBS-FWD"}
		if len(rules) < 3 || strings.Join(rules[:3], "\n") != strings.Join(want, "\n") {
			t.Errorf("FORWARD on lab1:\n%s\nwant it to start with\n%s", strings.Join(rules, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("a restarted agent keeps its jobs' networks and drops orphans", func(t *testing.T) {
		netOf := func(id string) string {
			out, _ := exec.Command("docker", "-H", dk, "inspect", "-f", "{{.HostConfig.NetworkMode}}", containerOf(t, dk, id)).CombinedOutput()
			return strings.TrimSpace(string(out))
		}
		kept := netOf(nb)
		orphan := trRun(t, bob, "--node", "lab1", img, "sleep", "600")
		trWaitJob(t, bob, orphan, "running")
		orphanNet := netOf(orphan)
		lab1.kill()
		// While the agent is away, bob's containers go behind its back.
		ids, _ := exec.Command("docker", "-H", dk, "ps", "-aq", "--filter", "network="+orphanNet).Output()
		if f := strings.Fields(string(ids)); len(f) > 0 {
			exec.Command("docker", append([]string{"-H", dk, "rm", "-f"}, f...)...).Run()
		}
		lab1.agent()
		lab1.waitDaemon()
		waitFor(t, 20*time.Second, "bob's orphaned network removed", func() error {
			if exec.Command("docker", "-H", dk, "network", "inspect", orphanNet).Run() == nil {
				return fmt.Errorf("%s is still there", orphanNet)
			}
			return nil
		})
		if exec.Command("docker", "-H", dk, "network", "inspect", kept).Run() != nil || netOf(nb) != kept {
			t.Errorf("alice's running job lost its network %s", kept)
		}
		waitFor(t, 20*time.Second, "lab1 online again", func() error { return liveNodes(alice, "lab1") })
		out, errOut, code := alice.cli("open", nb, "8080")
		if code != 0 {
			t.Fatalf("open after the restart: exit %d: %s%s", code, out, errOut)
		}
		url := strings.TrimSpace(out)
		waitFor(t, 10*time.Second, "the page through a tunnel after the restart", func() error {
			out, err := exec.Command("ip", "netns", "exec", alice.ns, "curl", "-sf", "--max-time", "5", url).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "labpool test page") {
				return fmt.Errorf("curl %s: %v %q", url, err, out)
			}
			return nil
		})
		// The guard is back too: a job still reaches no labpool port (once
		// alice's machine has seen lab1 back: it may still count it away).
		waitFor(t, 20*time.Second, "alice may launch on lab1 again", func() error {
			p, err := alice.client().Plan(context.Background(), app.LaunchRequest{Node: "lab1", Spec: jobs.Spec{Image: img}})
			if err != nil || !p.Fits {
				return fmt.Errorf("plan: %v %s", err, p.Reason)
			}
			return nil
		})
		if out := probe(t, alice, fmt.Sprintf("echo x | nc -w 3 %s 7420 >/dev/null 2>&1 && echo reached-host || echo refused-host", lab1.ip)); !strings.Contains(out, "refused-host") {
			t.Errorf("after the restart a job reaches its host's labpool port:\n%s", out)
		}
	})

	t.Run("networks go with their jobs", func(t *testing.T) {
		for _, id := range jobIDs(t, lab1) { // the machine's own user acts on every job
			mustCLI(t, lab1, "rm", "--force", id)
		}
		waitFor(t, 10*time.Second, "no job network left", func() error {
			out, _ := exec.Command("docker", "-H", dk, "network", "ls", "-q", "--filter", "label=labpool.managed=true").CombinedOutput()
			if s := strings.TrimSpace(string(out)); s != "" {
				return fmt.Errorf("networks left: %s", s)
			}
			return nil
		})
	})
}

// probe runs script as a job of h on lab1 and returns its output once it
// ended.
func probe(t *testing.T, h *host, script string) string {
	t.Helper()
	id := trRun(t, h, "--node", "lab1", "labpool-test/busybox:1", "sh", "-c", script+"; echo probe-done")
	trWaitJob(t, h, id, "exited")
	out := mustCLI(t, h, "logs", id)
	t.Logf("%s's probe said:\n%s", h.name, out)
	if !strings.Contains(out, "probe-done") {
		t.Fatalf("the probe did not finish")
	}
	return out
}

// containerOf is the container of job id on the engine at sock.
func containerOf(t *testing.T, sock, id string) string {
	t.Helper()
	out, err := exec.Command("docker", "-H", sock, "ps", "-aq", "--filter", "label=labpool.job="+id).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("find the container of %s: %v %s", id, err, out)
	}
	return strings.Fields(string(out))[0]
}

// containerAddr is the address of job id's container, as an attacker on
// the machine would guess it.
func containerAddr(t *testing.T, sock, id string) string {
	t.Helper()
	out, err := exec.Command("docker", "-H", sock, "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", containerOf(t, sock, id)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("address of %s: %v %s", id, err, out)
	}
	return strings.Fields(string(out))[0]
}

// linkManifest copies the archive in to out with manifest.json a symlink
// to a copy of it.
func linkManifest(t *testing.T, in, out string) {
	t.Helper()
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	tr, tw := tar.NewReader(f), tar.NewWriter(&buf)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if hdr.Name == "manifest.json" {
			tw.WriteHeader(&tar.Header{Name: "real.json", Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
			tw.Write(data)
			tw.WriteHeader(&tar.Header{Name: "manifest.json", Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: "real.json"})
			continue
		}
		tw.WriteHeader(hdr)
		tw.Write(data)
	}
	tw.Close()
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// jobIDs lists the IDs of every job h sees.
func jobIDs(t *testing.T, h *host) []string {
	t.Helper()
	out := mustCLI(t, h, "ps", "--all", "--json")
	var js []struct {
		ID      string `json:"id"`
		Removed bool   `json:"removed"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatalf("ps --json: %v: %s", err, out)
	}
	ids := make([]string, 0, len(js))
	for _, j := range js {
		if !j.Removed {
			ids = append(ids, j.ID)
		}
	}
	return ids
}

// tunnelGet opens a tunnel from h to port 8080 of job id and reads the
// test page through it.
func tunnelGet(t *testing.T, h *host, id string) {
	t.Helper()
	out, errOut, code := h.cli("open", id, "8080")
	if code != 0 {
		t.Fatalf("open: exit %d: %s%s", code, out, errOut)
	}
	url := strings.TrimSpace(out)
	waitFor(t, 10*time.Second, "the page through the tunnel", func() error {
		out, err := exec.Command("ip", "netns", "exec", h.ns, "curl", "-sf", "--max-time", "5", url).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "labpool test page") {
			return fmt.Errorf("curl %s: %v %q", url, err, out)
		}
		return nil
	})
}

// grepLines are the lines of s that contain sub.
func grepLines(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// memberPrefix is where h, as a member, may name the images it loads.
func memberPrefix(t *testing.T, h *host) string {
	t.Helper()
	self, err := h.client().Self(context.Background())
	if err != nil {
		t.Fatalf("%s: self: %v", h.name, err)
	}
	return containers.MemberPrefix(self.ID)
}
