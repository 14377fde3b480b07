//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
	// LABPOOL_BENCH_SETS=small (or none) leaves out the 2 GiB file when
	// only the tree or its re-copy is being looked at.
	sets := []string{"small", "big"}
	if v, ok := os.LookupEnv("LABPOOL_BENCH_SETS"); ok {
		sets = strings.Fields(strings.ReplaceAll(v, ",", " "))
	}
	base := benchDisk(b) // before the agents: their namespaces see the mounts made so far
	l := newLAN(b, "laptop", "server")
	laptop, server := l.host("laptop"), l.host("server")
	profiles := os.Getenv("LABPOOL_BENCH_PPROF") // a directory: CPU profiles of both agents during each labpool copy
	if profiles != "" {
		laptop.env = append(laptop.env, "LABPOOL_PPROF=127.0.0.1:6060")
		server.env = append(server.env, "LABPOOL_PPROF=127.0.0.1:6060")
	}
	laptop.agent()
	server.agent()
	laptop.waitDaemon()
	server.waitDaemon()
	joinAll(b, server, laptop)
	waitFor(b, 20*time.Second, "server online", func() error { return liveNodes(laptop, "server") })

	big, small := filepath.Join(base, "big"), filepath.Join(base, "small")
	os.MkdirAll(big, 0o755)
	if slices.Contains(sets, "big") {
		writeRandom(b, filepath.Join(big, "data.bin"), 2<<30)
	}
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
		if strings.HasSuffix(name, " big") {
			warmMemory(b, base, 3<<30)
		}
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
		for _, set := range sets {
			src := filepath.Join(base, set)
			if set == "big" {
				// The ceiling: the same bytes over one bare TLS stream
				// between the same two namespaces, memory to memory.
				res["bare-tls-big"] += bareTLS(b, laptop, server, 2<<30)
			}
			cpu := agentCPU(laptop) + agentCPU(server)
			res["labpool-"+set] += timeIt("labpool "+set, profileAgents(b, profiles, set, run(laptop, "cp", "-q", src, "server:recv/"), laptop, server))
			res["labpool-"+set+"-agents-cpu"] += agentCPU(laptop) + agentCPU(server) - cpu
			res["rsync-"+set] += timeIt("rsync "+set, shell("rsync -a -e '"+ssh+"' "+src+" "+dest))
			res["scp-"+set] += timeIt("scp "+set, shell(scp+" "+src+" "+dest))
		}
		// Unchanged re-copy of the tree: after a first copy, each tool
		// copies it again three times, or LABPOOL_BENCH_RECOPIES (the mean
		// is reported).
		recopies := 3
		if n, err := strconv.Atoi(os.Getenv("LABPOOL_BENCH_RECOPIES")); err == nil && n > 0 {
			recopies = n
		}
		clean()
		run(laptop, "cp", "-q", small, "server:recv/")()
		for range recopies {
			cpu := agentCPU(laptop) + agentCPU(server)
			start := time.Now()
			out, _, _ := laptop.cli("cp", "-q", small, "server:recv/")
			res["labpool-recopy"] += time.Since(start) / time.Duration(recopies)
			res["labpool-recopy-agents-cpu"] += (agentCPU(laptop) + agentCPU(server) - cpu) / time.Duration(recopies)
			b.Logf("labpool re-copy: %s", strings.TrimSpace(out))
		}
		clean()
		shell("rsync -a -e '" + ssh + "' " + small + " " + dest)()
		for range recopies {
			start := time.Now()
			shell("rsync -a -e '" + ssh + "' " + small + " " + dest)()
			res["rsync-recopy"] += time.Since(start) / time.Duration(recopies)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	for k, v := range res {
		b.ReportMetric(v.Seconds()/n, k+"-s")
	}
	for _, set := range sets {
		best := min(res["rsync-"+set], res["scp-"+set])
		b.ReportMetric(best.Seconds()/res["labpool-"+set].Seconds(), set+"-speedup-x")
	}
	if res["bare-tls-big"] > 0 {
		b.ReportMetric(res["bare-tls-big"].Seconds()/res["labpool-big"].Seconds()*100, "big-%-of-bare-tls")
	}
	if res["labpool-small"] > 0 {
		b.ReportMetric(res["labpool-recopy"].Seconds()/res["labpool-small"].Seconds()*100, "recopy-%-of-first")
	}
	b.ReportMetric(0, "ns/op")
}

// profileAgents starts CPU profiles of both agents (LABPOOL_PPROF) of
// LABPOOL_BENCH_PPROF_SECONDS (10 by default) into dir, named after the
// set, while cmd runs, when dir is set; the returned command runs cmd and
// waits for the files.
func profileAgents(b *testing.B, dir, set string, cmd func() error, hosts ...*host) func() error {
	if dir == "" {
		return cmd
	}
	secs := os.Getenv("LABPOOL_BENCH_PPROF_SECONDS")
	if secs == "" {
		secs = "10"
	}
	return func() error {
		var curls []*exec.Cmd
		for _, h := range hosts {
			out := filepath.Join(dir, fmt.Sprintf("%s-%s-%d.pprof", h.name, set, time.Now().UnixNano()))
			c := exec.Command("ip", "netns", "exec", h.ns, "curl", "-s", "-o", out, "http://127.0.0.1:6060/debug/pprof/profile?seconds="+secs)
			if err := c.Start(); err != nil {
				return err
			}
			curls = append(curls, c)
		}
		err := cmd()
		for _, c := range curls {
			c.Wait()
		}
		return err
	}
}

// benchDisk returns an empty directory for the copies: a new journaled
// ext4 file system on a loop device where that can be made, so that every
// run starts from the same state whatever the machine's own file system
// went through before. (On ext4 without a journal, as some virtual
// machines have, files created within minutes of many others being removed
// cost far more, and the cost fell on whichever tool came after a
// clean-up.) Elsewhere it is a temporary directory.
func benchDisk(b *testing.B) string {
	dir := b.TempDir()
	img := filepath.Join(dir, "disk.img")
	mnt := filepath.Join(dir, "mnt")
	os.MkdirAll(mnt, 0o755)
	try := func(name string, args ...string) error {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v %s", name, err, out)
		}
		return nil
	}
	err := try("truncate", "-s", "16G", img)
	if err == nil {
		err = try("mkfs.ext4", "-q", "-F", img)
	}
	var loop []byte
	if err == nil {
		loop, err = exec.Command("losetup", "--direct-io=on", "-f", "--show", img).Output()
	}
	if err != nil {
		b.Logf("copies go to a temporary directory (no loop file system: %v)", err)
		os.Remove(img)
		return mnt
	}
	dev := strings.TrimSpace(string(loop))
	b.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	if err := try("mount", dev, mnt); err != nil {
		b.Logf("copies go to a temporary directory (%v)", err)
		return mnt
	}
	b.Cleanup(func() { exec.Command("umount", mnt).Run() })
	return mnt
}

// warmMemory writes and removes a file of n bytes in dir, just before each
// copy of the 2 GiB file. In a virtual machine whose memory the host hands
// over on first touch (and may take back once freed), page cache in memory
// not touched lately costs several times more to fill: without this,
// whichever tool copied the 2 GiB file first paid for it, by seconds.
func warmMemory(b *testing.B, dir string, n int64) {
	name := filepath.Join(dir, "warm")
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 16<<20)
	for i := range buf {
		buf[i] = byte(i) | 1 // not zeros: nothing may skip the writes
	}
	for off := int64(0); off < n; off += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	f.Close()
	os.Remove(name) // timeIt syncs next
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

// agentCPU is the processor time h's agent has used so far.
func agentCPU(h *host) time.Duration {
	h.mu.Lock()
	pid := h.proc.Process.Pid
	h.mu.Unlock()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	var ticks int64
	for _, v := range f[11:13] { // utime, stime
		var n int64
		fmt.Sscan(v, &n)
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100
}
