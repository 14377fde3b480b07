//go:build linux

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/app"
)

// TestJobs drives containers through the CLI of a laptop against agents in
// their own namespaces, each with its own dockerd: placement, logs, stats,
// stop, rm, the queue, a tunnel that survives a cut link, and an agent
// killed with SIGKILL that re-adopts its running containers.
func TestJobs(t *testing.T) {
	l := newLAN(t, "gpu1", "gpu2", "laptop")
	gpu1, gpu2, laptop := l.host("gpu1"), l.host("gpu2"), l.host("laptop")
	gpu1.env = []string{"LABPOOL_SIMULATE_GPUS=2"}
	dk1, dk2 := gpu1.docker(), gpu2.docker()
	gpu1.agent()
	gpu2.agent()
	const webAddr = "127.0.0.1:7421"
	laptop.start("web", "--listen", webAddr, "--name", "laptop", "--iface", "eth0", "--peer-listen", ":7420")
	for _, h := range l.hosts {
		h.waitDaemon()
	}
	joinAll(t, gpu1, gpu2, laptop)
	waitFor(t, 20*time.Second, "both agents live on the laptop", func() error { return liveNodes(laptop, "gpu1", "gpu2") })
	const img = "labpool-test/busybox:1"

	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := laptop.cli(append([]string{"run"}, args...)...)
		if code != 0 {
			t.Fatalf("labpool run %v: exit %d: %s%s", args, code, out, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return lines[len(lines)-1]
	}
	job := func(id string) app.Job {
		t.Helper()
		j, err := laptop.client().Job(context.Background(), id)
		if err != nil {
			t.Fatalf("job %s: %v", id, err)
		}
		return j
	}
	waitJob := func(id string, state string) app.Job {
		t.Helper()
		var j app.Job
		waitFor(t, 20*time.Second, "job "+id+" "+state, func() error {
			j = job(id)
			if string(j.State) != state {
				return fmt.Errorf("state %s (%s)", j.State, j.Error)
			}
			return nil
		})
		return j
	}

	t.Run("placement, logs, stats, stop, rm", func(t *testing.T) {
		id := run("--gpus", "1", "--name", "train", img, "sh", "-c", "echo started on $NVIDIA_VISIBLE_DEVICES; while true; do echo step; sleep 0.2; done")
		j := waitJob(id, "running")
		if j.NodeName != "gpu1" || len(j.GPUs) != 1 {
			t.Fatalf("a 1-GPU job went to %s with GPUs %v, want gpu1 (the only machine with GPUs)", j.NodeName, j.GPUs)
		}
		cmd := exec.Command("ip", "netns", "exec", laptop.ns, bin, "--data", laptop.data, "logs", "-f", id)
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var first []string
		for len(first) < 3 && sc.Scan() {
			first = append(first, sc.Text())
		}
		cmd.Process.Kill()
		cmd.Wait()
		if len(first) == 0 || first[0] != "started on "+j.GPUs[0] {
			t.Errorf("followed logs %q, want the granted GPU %s first", first, j.GPUs[0])
		}
		out, errOut, code := laptop.cli("stats", "--json", id)
		var st struct {
			MemUsedBytes uint64 `json:"mem_used_bytes"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.MemUsedBytes == 0 {
			t.Errorf("stats: exit %d %s %s", code, out, errOut)
		}
		out, errOut, code = laptop.cli("ps", "--json")
		if code != 0 || !strings.Contains(out, id) {
			t.Errorf("ps: exit %d %s", code, errOut)
		}
		var raw []map[string]any
		json.Unmarshal([]byte(out), &raw)
		for _, k := range []string{"id", "name", "node", "image", "state", "gpus", "created", "started", "finished", "exit_code", "owner"} {
			if len(raw) == 0 {
				t.Fatalf("ps --json is empty")
			}
			if _, ok := raw[0][k]; !ok {
				t.Errorf("ps --json lacks %q", k)
			}
		}
		if _, errOut, code := laptop.cli("stop", id); code != 0 {
			t.Fatalf("stop: %s", errOut)
		}
		j = waitJob(id, "exited")
		if j.Finished == nil || j.GPUSeconds <= 0 {
			t.Errorf("stopped job %+v: want finished and GPU-seconds", j.Job)
		}
		if _, errOut, code := laptop.cli("rm", id); code != 0 {
			t.Fatalf("rm: %s", errOut)
		}
		waitFor(t, 5*time.Second, "the removed job gone from ps --all", func() error {
			out, _, _ := laptop.cli("ps", "--all", "--json")
			if strings.Contains(out, id) {
				return fmt.Errorf("still listed")
			}
			return nil
		})
	})

	t.Run("browser: launch, logs, stop", func(t *testing.T) {
		script := filepath.Join(repoRoot(), "frontend", "e2e", "jobs.mjs")
		cmd := exec.Command("ip", "netns", "exec", laptop.ns, "node", script, "--url", laptop.webURL(),
			"--node", "gpu2", "--image", img, "--cmd", "sh -c 'echo hello from the browser; sleep 600'",
			"--expect-log", "hello from the browser", "--screenshot", filepath.Join(artifacts(t), "jobs.png"))
		cmd.Dir = filepath.Join(repoRoot(), "frontend")
		out, err := cmd.CombinedOutput()
		t.Logf("playwright: %s", strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("browser jobs test: %v", err)
		}
	})

	t.Run("image load and pull", func(t *testing.T) {
		dir := t.TempDir()
		archive := filepath.Join(dir, "loaded.tar")
		loaded := memberPrefix(t, laptop) + "labpool-test/loaded:1" // a member's own name
		for _, args := range [][]string{
			{"tag", img, loaded},
			{"save", "-o", archive, loaded},
		} {
			if out, err := exec.Command("docker", append([]string{"-H", dk2}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("docker %v: %v %s", args, err, out)
			}
		}
		out, errOut, code := laptop.cli("image", "load", "gpu1", archive)
		if code != 0 || !strings.Contains(out, "labpool-test/loaded:1") {
			t.Fatalf("image load: exit %d %s %s", code, out, errOut)
		}
		out, _, _ = laptop.cli("images", "--node", "gpu1", "--json")
		if !strings.Contains(out, "labpool-test/loaded:1") {
			t.Errorf("gpu1 images after load: %s", out)
		}
		bad := filepath.Join(dir, "corrupt.tar")
		os.WriteFile(bad, []byte("this is not an image archive"), 0o644)
		if _, errOut, code := laptop.cli("image", "load", "gpu1", bad); code != 1 || errOut == "" {
			t.Errorf("corrupt archive: exit %d %q, want 1 and a message", code, errOut)
		}

		if _, err := exec.LookPath("docker-registry"); err != nil {
			skipOrFail(t, "pull test needs Debian's docker-registry")
		}
		cfg := filepath.Join(dir, "registry.yml")
		os.WriteFile(cfg, []byte("version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: "+filepath.Join(dir, "reg")+"\nhttp:\n  addr: 127.0.0.1:5000\n"), 0o644)
		reg := exec.Command("ip", "netns", "exec", gpu1.ns, "docker-registry", "serve", cfg)
		if err := reg.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { reg.Process.Kill(); reg.Wait() }()
		const ref = "127.0.0.1:5000/lab/pulled:1"
		waitFor(t, 10*time.Second, "the registry to answer", func() error {
			return exec.Command("ip", "netns", "exec", gpu1.ns, "curl", "-sf", "http://127.0.0.1:5000/v2/").Run()
		})
		for _, args := range [][]string{{"tag", img, ref}, {"push", ref}, {"rmi", ref}} {
			if out, err := exec.Command("docker", append([]string{"-H", dk1}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("docker %v: %v %s", args, err, out)
			}
		}
		out, errOut, code = laptop.cli("image", "pull", "gpu1", ref)
		if code != 0 {
			t.Fatalf("image pull: exit %d %s %s", code, out, errOut)
		}
		out, _, _ = laptop.cli("images", "--node", "gpu1", "--json")
		if !strings.Contains(out, ref) {
			t.Errorf("gpu1 images after pull: %s", out)
		}
	})

	t.Run("shared folders: list, ls, mounts", func(t *testing.T) {
		base := t.TempDir()
		data, results := filepath.Join(base, "datasets"), filepath.Join(base, "results")
		os.MkdirAll(filepath.Join(data, "train set"), 0o755)
		os.MkdirAll(results, 0o755)
		// Jobs run as an unprivileged user (uid 65534 where the share's owner
		// is root): a folder they write to must let them.
		os.Chmod(results, 0o777)
		os.WriteFile(filepath.Join(data, "in.txt"), []byte("input data\n"), 0o644)
		os.WriteFile(filepath.Join(data, "train set", "ünï.bin"), make([]byte, 4096), 0o644)
		for _, args := range [][]string{{"share", "datasets", data}, {"share", "--rw", "results", results}} {
			if out, errOut, code := gpu2.cli(args...); code != 0 {
				t.Fatalf("%v: %s%s", args, out, errOut)
			}
		}
		var list []app.Folder
		waitFor(t, 10*time.Second, "both folders listed on the laptop", func() error {
			out, _, _ := laptop.cli("folders", "--json")
			list = nil
			json.Unmarshal([]byte(out), &list)
			if len(list) != 2 {
				return fmt.Errorf("%d folders: %s", len(list), out)
			}
			return nil
		})
		if f := list[0]; f.NodeName != "gpu2" || f.Name != "datasets" || f.Mode != "ro" || f.Files != 2 || f.SizeBytes != 4107 {
			t.Errorf("datasets listed as %+v", f)
		}
		out, errOut, code := laptop.cli("ls", "gpu2:datasets/train set")
		if code != 0 || !strings.Contains(out, "ünï.bin") {
			t.Errorf("ls: exit %d %s%s", code, out, errOut)
		}
		if _, errOut, code := laptop.cli("ls", "gpu2:datasets/../.."); code == 0 || !strings.Contains(errOut, "leaves the folder") {
			t.Errorf("ls outside the share: exit %d %s", code, errOut)
		}
		if _, errOut, code := laptop.cli("run", "--node", "gpu2", "--mount", "datasets:/data:rw", img, "true"); code == 0 || !strings.Contains(errOut, "read-only") {
			t.Errorf("rw mount of a ro share: exit %d %s", code, errOut)
		}
		id := run("--node", "gpu2", "--mount", "datasets:/data", "--mount", "results:/out:rw", img,
			"sh", "-c", "cat /data/in.txt > /out/out.txt && (touch /data/x 2>/dev/null || echo ro-refused)")
		waitJob(id, "exited")
		got, err := os.ReadFile(filepath.Join(results, "out.txt"))
		if err != nil || string(got) != "input data\n" {
			t.Errorf("the job wrote %q (%v) to the rw folder", got, err)
		}
		out, _, _ = laptop.cli("logs", id)
		if !strings.Contains(out, "ro-refused") {
			t.Errorf("the job could write to the read-only folder: logs %q", out)
		}
	})

	t.Run("clear errors", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--node", "gpu2", "--gpus", "1", img, "true"}, "has 0 GPUs"},
			{[]string{"--node", "gpu2", "labpool-test/none:1", "true"}, "not on this machine"},
			{[]string{"--memory", "lots", img, "true"}, "size"},
			{[]string{"--node", "gpu2", "--gpus", "5", img, "true"}, "GPUs"},
		} {
			out, errOut, code := laptop.cli(append([]string{"run"}, tc.args...)...)
			if code == 0 || !strings.Contains(errOut, tc.want) {
				t.Errorf("run %v: exit %d, %q%q; want an error saying %q", tc.args, code, out, errOut, tc.want)
			}
		}
	})

	t.Run("queued job starts when the GPUs free up", func(t *testing.T) {
		a := run("--node", "gpu1", "--gpus", "2", img, "sleep", "3")
		waitJob(a, "running")
		out, errOut, code := laptop.cli("run", "--node", "gpu1", "--gpus", "1", img, "true")
		if code == 0 || !strings.Contains(errOut, "GPU 0: job") && !strings.Contains(errOut, "GPUs 0, 1: job") {
			t.Errorf("busy GPUs without --queue: exit %d %s%s, want an error naming who holds them", code, out, errOut)
		}
		b := run("--node", "gpu1", "--gpus", "1", "--queue", img, "sleep", "1")
		if j := job(b); j.State != "queued" {
			t.Fatalf("job b is %s, want queued", j.State)
		}
		waitJob(a, "exited")
		waitJob(b, "running")
	})

	t.Run("tunnel survives a cut link", func(t *testing.T) {
		id := run("--node", "gpu2", "--port", "8080", img, "httpd", "-f", "-p", "8080", "-h", "/www")
		waitJob(id, "running")
		out, errOut, code := laptop.cli("open", id, "8080")
		if code != 0 {
			t.Fatalf("open: %s", errOut)
		}
		url := strings.TrimSpace(out)
		get := func() error {
			out, err := exec.Command("ip", "netns", "exec", laptop.ns, "curl", "-sf", "--max-time", "5", url).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "labpool test page") {
				return fmt.Errorf("curl %s: %v %q", url, err, out)
			}
			return nil
		}
		waitFor(t, 10*time.Second, "the page through the tunnel", get)
		l.ip("-n", gpu2.ns, "link", "set", "eth0", "down")
		time.Sleep(4 * time.Second)
		l.ip("-n", gpu2.ns, "link", "set", "eth0", "up")
		waitFor(t, 20*time.Second, "the page again through the same URL", get)
		laptop.cli("stop", id)
	})

	t.Run("SIGKILLed agent re-adopts 20 running containers", func(t *testing.T) {
		var ids []string
		for i := range 20 {
			ids = append(ids, run("--node", "gpu2", "--name", fmt.Sprintf("long%02d", i), img, "sleep", "1000"))
		}
		for _, id := range ids {
			waitJob(id, "running")
		}
		before := startedAt(t, dk2)
		gpu2.kill()
		time.Sleep(time.Second)
		gpu2.agent()
		gpu2.waitDaemon()
		waitFor(t, 20*time.Second, "gpu2 online", func() error { return liveNodes(laptop, "gpu2") })
		after := startedAt(t, dk2)
		restarted := 0
		for c, st := range before {
			if after[c] != st {
				restarted++
			}
		}
		if len(before) < 20 || restarted > 0 {
			t.Errorf("%d labpool containers before, %d restarted by re-adoption", len(before), restarted)
		}
		for _, id := range ids {
			if j := job(id); j.State != "running" {
				t.Errorf("job %s is %s after re-adoption", id, j.State)
			}
		}
		if _, errOut, code := laptop.cli("logs", "--tail", "5", ids[0]); code != 0 {
			t.Errorf("logs after re-adoption: %s", errOut)
		}
		_ = dk1
	})
}

// startedAt maps each labpool container of an engine to its start time.
func startedAt(t *testing.T, sock string) map[string]string {
	t.Helper()
	out, err := exec.Command("docker", "-H", sock, "ps", "-q", "--filter", "label=labpool.managed=true").Output()
	if err != nil {
		t.Fatal(err)
	}
	ids := strings.Fields(string(out))
	res := map[string]string{}
	if len(ids) == 0 {
		return res
	}
	out, err = exec.Command("docker", append([]string{"-H", sock, "inspect", "-f", "{{.ID}} {{.State.StartedAt}}"}, ids...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if id, st, ok := strings.Cut(line, " "); ok {
			res[id] = st
		}
	}
	return res
}
