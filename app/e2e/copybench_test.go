package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkCopyVsSSH copies, between two namespaces and in one run, a
// 2 GiB file and a tree of 20,000 small files with labpool cp, rsync -a
// over ssh and scp -r (Debian's openssh-server in the receiving namespace),
// and unchanged re-copies of the tree with labpool and rsync. It reports
// seconds per method and labpool's ratio to the faster of the others.
func BenchmarkCopyVsSSH(b *testing.B) {
	for _, tool := range []string{"sshd", "rsync", "scp", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("needs %s (apt-get install openssh-server rsync)", tool)
		}
	}
	l := newLAN(b, "laptop", "server")
	laptop, server := l.host("laptop"), l.host("server")
	laptop.agent()
	server.agent()
	laptop.waitDaemon()
	server.waitDaemon()
	joinAll(b, server, laptop)
	waitFor(b, 20*time.Second, "server online", func() error { return liveNodes(laptop, "server") })

	base, err := os.MkdirTemp("", "lp-copybench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(base)
	big, small := filepath.Join(base, "big"), filepath.Join(base, "small")
	os.MkdirAll(big, 0o755)
	writeRandom(b, filepath.Join(big, "data.bin"), 2<<30)
	for i := range 20000 {
		p := filepath.Join(small, fmt.Sprintf("d%03d", i/100), fmt.Sprintf("f%05d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, randData(512+i%3000), 0o644)
	}
	recv := filepath.Join(base, "recv")
	os.MkdirAll(recv, 0o755)
	mustCLI(b, server, "share", "--rw", "recv", recv)
	ssh := startSSHD(b, server, base)
	scp := "scp -r -p -q -P 2222" + strings.TrimPrefix(strings.TrimSuffix(ssh, " -p 2222"), "ssh")

	clean := func() {
		os.RemoveAll(recv)
		os.MkdirAll(recv, 0o755)
	}
	timeIt := func(name string, cmd func() error) time.Duration {
		clean()
		exec.Command("sync").Run()
		start := time.Now()
		if err := cmd(); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		return time.Since(start)
	}
	run := func(h *host, args ...string) func() error {
		return func() error {
			out, errOut, code := h.cli(args...)
			if code != 0 {
				return fmt.Errorf("exit %d: %s%s", code, out, errOut)
			}
			return nil
		}
	}
	shell := func(s string) func() error {
		return func() error {
			out, err := exec.Command("ip", "netns", "exec", laptop.ns, "sh", "-c", s).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}
	}
	dest := "root@" + server.ip + ":" + recv + "/"
	var res = map[string]time.Duration{}
	b.ResetTimer()
	for range b.N {
		// The tree first: 2 GiB files written three times leave the disk
		// busy with write-back for a while, which would blur its timings.
		for _, set := range []string{"small", "big"} {
			src := filepath.Join(base, set)
			res["labpool-"+set] += timeIt("labpool "+set, run(laptop, "cp", "-q", src, "server:recv/"))
			res["rsync-"+set] += timeIt("rsync "+set, shell("rsync -a -e '"+ssh+"' "+src+" "+dest))
			res["scp-"+set] += timeIt("scp "+set, shell(scp+" "+src+" "+dest))
		}
		// Unchanged re-copy of the tree: after a first copy, each tool
		// copies it again three times (the mean is reported).
		const recopies = 3
		clean()
		run(laptop, "cp", "-q", small, "server:recv/")()
		for range recopies {
			start := time.Now()
			out, _, _ := laptop.cli("cp", "-q", small, "server:recv/")
			res["labpool-recopy"] += time.Since(start) / recopies
			b.Logf("labpool re-copy: %s", strings.TrimSpace(out))
		}
		clean()
		shell("rsync -a -e '" + ssh + "' " + small + " " + dest)()
		for range recopies {
			start := time.Now()
			shell("rsync -a -e '" + ssh + "' " + small + " " + dest)()
			res["rsync-recopy"] += time.Since(start) / recopies
		}
	}
	b.StopTimer()
	n := float64(b.N)
	for k, v := range res {
		b.ReportMetric(v.Seconds()/n, k+"-s")
	}
	for _, set := range []string{"big", "small"} {
		best := min(res["rsync-"+set], res["scp-"+set])
		b.ReportMetric(best.Seconds()/res["labpool-"+set].Seconds(), set+"-speedup-x")
	}
	b.ReportMetric(res["labpool-recopy"].Seconds()/res["labpool-small"].Seconds()*100, "recopy-%-of-first")
	b.ReportMetric(0, "ns/op")
}

// startSSHD runs Debian's sshd in h's namespace on port 2222 and returns
// the ssh command line (without destination) that reaches it.
func startSSHD(b *testing.B, h *host, base string) string {
	b.Helper()
	dir := filepath.Join(base, "ssh")
	os.MkdirAll(dir, 0o700)
	os.MkdirAll("/run/sshd", 0o755)
	for _, k := range []string{"host", "client"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			b.Fatalf("ssh-keygen: %v %s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "client.pub"))
	os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600)
	cfg := filepath.Join(dir, "sshd_config")
	os.WriteFile(cfg, []byte(fmt.Sprintf("Port 2222\nListenAddress %s\nHostKey %s\nPermitRootLogin yes\nAuthorizedKeysFile %s\nUsePAM no\nStrictModes no\nPidFile %s\nSubsystem sftp internal-sftp\n",
		h.ip, filepath.Join(dir, "host"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"))), 0o600)
	cmd := exec.Command("ip", "netns", "exec", h.ns, "/usr/sbin/sshd", "-D", "-e", "-f", cfg)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ssh := fmt.Sprintf("ssh -i %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -p 2222", filepath.Join(dir, "client"))
	waitFor(b, 10*time.Second, "sshd", func() error {
		return exec.Command("ip", "netns", "exec", h.ns, "sh", "-c", ssh+" root@"+h.ip+" true").Run()
	})
	return ssh
}
