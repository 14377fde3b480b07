//go:build linux

package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm/slurmtest"
)

// startAs runs `labpool agent` in h's namespace as the Unix user name
// (setpriv), from the labpool binary at lp, as a service manager would.
func (h *host) startAs(name, lp string, args ...string) {
	h.lan.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	u, err := user.Lookup(name)
	if err != nil {
		h.lan.t.Fatal(err)
	}
	full := append([]string{"netns", "exec", h.ns}, slurmtest.AsUser(h.lan.t, name)...)
	full = append(append(full, lp, "--data", h.data), args...)
	cmd := exec.Command("ip", full...)
	h.log = &syncBuffer{}
	cmd.Stdout, cmd.Stderr = h.log, h.log
	cmd.Env = append(append(os.Environ(), "LABPOOL_LOG=debug", "HOME="+u.HomeDir, "USER="+name), h.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		h.lan.t.Fatalf("start labpool on %s as %s: %v", h.name, name, err)
	}
	h.proc = cmd
	go cmd.Wait()
}

// readmeSudoRule is the README's sudoers rule for the agent's user
// agentUser, the job account and the labpool binary at lp.
func readmeSudoRule(t *testing.T, agentUser, account, lp string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "labpool ALL=(labpool-jobs) "); ok {
			rule := agentUser + " ALL=(" + account + ") " + strings.TrimSpace(rest)
			return strings.ReplaceAll(rule, "/usr/local/bin/labpool", lp)
		}
	}
	t.Fatal("README.md documents no sudoers rule")
	return ""
}

// TestSlurmAgentSudo: the cluster's agent runs as an ordinary Unix user
// (not root) with exactly the README's sudoers rule, from the labpool
// binary that rule names. A member's job runs as the job account with
// its token; `logs -f` follows it and `logs` reads it after stop
// cancelled it, although the agent's user cannot open the account's
// output itself (the binary's slurm-open-output verb, run as the
// account, opens it); a job that swaps its output for a link to the
// agent's key gets a refusal naming the rule.
func TestSlurmAgentSudo(t *testing.T) {
	l := newLAN(t, "cluster", "laptop")
	cl, laptop := l.host("cluster"), l.host("laptop")
	c := slurmtest.Start(t, slurmtest.Options{Net: &slurmtest.Net{
		Switch: l.prefix + "sw", Bridge: "br0", Controller: cl.ns, ControllerAddr: cl.ip,
		NodeAddrs: []string{fmt.Sprintf("10.231.%d.101/24", l.subnet), fmt.Sprintf("10.231.%d.102/24", l.subnet)},
	}})
	agentUser, jobUser := slurmtest.AddUser(t), slurmtest.AddUser(t)
	lp := slurmtest.Runnable(t, bin)
	slurmtest.InstallSudoers(t, readmeSudoRule(t, agentUser, jobUser, lp))
	cl.data = slurmtest.OwnedDir(t, agentUser)
	cl.env = append(cl.env, c.Env()...)
	cl.startAs(agentUser, lp, "agent", "--name", "cluster", "--iface", "eth0", "--listen", ":7420", "--slurm", "--slurm-job-user", jobUser)
	laptop.agent()
	cl.waitDaemon()
	laptop.waitDaemon()
	agent, err := user.Lookup(agentUser)
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", daemonPID(t, cl)))
	if err != nil || !strings.Contains(string(status), "\nUid:\t"+agent.Uid+"\t") {
		t.Fatalf("the cluster's agent is not %s (uid %s): %v\n%s", agentUser, agent.Uid, err, status)
	}
	joinAll(t, cl, laptop)
	waitFor(t, 20*time.Second, "the laptop follows the cluster", func() error { return liveNodes(laptop, "cluster") })
	s := &slurmSession{c: c, laptop: laptop}

	token := fmt.Sprintf("hf_sudo_%d", os.Getpid())
	id := s.launch(t, jobs.Spec{Env: []string{"HF_TOKEN=" + token},
		Cmd: []string{"sh", "-c", `echo "$(id -un) $HF_TOKEN"; exec sleep 600`}})
	j := s.wait(t, id, "running")
	want := jobUser + " " + token
	followed := make(chan string, 1)
	go func() {
		out, errOut, code := laptop.cli("logs", "-f", id)
		followed <- fmt.Sprintf("%s%s (exit %d)", out, errOut, code)
	}()
	waitFor(t, 20*time.Second, "the job's first line in its output", func() error {
		if got := strings.TrimSpace(mustCLI(t, laptop, "logs", id)); got != want {
			return fmt.Errorf("logs: %q", got)
		}
		return nil
	})
	home := jobHome(t, jobUser)
	out := filepath.Join(home, ".labpool-slurm", "slurm-"+j.Container+".out")
	cat := append(slurmtest.AsUser(t, agentUser), "cat", out)
	if b, err := exec.Command(cat[0], cat[1:]...).CombinedOutput(); err == nil {
		t.Errorf("the agent's user reads %s itself (%q): this test proves nothing", out, b)
	}
	mustCLI(t, laptop, "stop", id)
	s.wait(t, id, "exited")
	if st := s.squeueState(t, j.Container); st != "CANCELLED" {
		t.Errorf("Slurm job %s is %s after stop, want CANCELLED", j.Container, st)
	}
	if got := <-followed; !strings.HasPrefix(got, want+"\n") {
		t.Errorf("logs -f printed %q, want %q first", got, want)
	}
	if first, _ := bufio.NewReader(strings.NewReader(mustCLI(t, laptop, "logs", id))).ReadString('\n'); first != want+"\n" {
		t.Errorf("logs after stop starts %q", first)
	}

	key, err := os.ReadFile(filepath.Join(cl.data, "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	keyLine := strings.Split(strings.TrimSpace(string(key)), "\n")[1]
	swap := s.launch(t, jobs.Spec{Cmd: []string{"sh", "-c",
		`out="$HOME/.labpool-slurm/slurm-$SLURM_JOB_ID.out"; rm -f "$out"; ln -s "$1"/key.pem "$out"`, "sh", cl.data}})
	s.wait(t, swap, "exited")
	logs, errOut, code := laptop.cli("logs", swap)
	if strings.Contains(logs+errOut, keyLine) {
		t.Errorf("labpool logs printed the agent's key")
	}
	if code == 0 || !strings.Contains(errOut, "its account's file") {
		t.Errorf("logs of a job whose output is a link: exit %d %q %q, want a refusal naming the rule", code, logs, errOut)
	}
}

// jobHome is the home directory of the Unix user name.
func jobHome(t *testing.T, name string) string {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return u.HomeDir
}
