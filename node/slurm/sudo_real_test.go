//go:build linux

package slurm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm/slurmtest"
)

// sudoChildEnv carries a sudoAgent to the test binary run as the agent's
// unprivileged user (TestSudoAgentChild).
const sudoChildEnv = "LABPOOL_TEST_SUDO_AGENT"

// sudoAgent is what the agent run as an ordinary user is given.
type sudoAgent struct {
	Conf     string   // slurm.conf
	StateDir string   // the agent's, owned by its user, mode 0700
	Account  string   // the job account
	Opener   []string // the labpool binary's verb that opens an output as the account
}

// readmeSudoers is the sudoers rule the README documents, for the
// agent's user labpool and the job account labpool-jobs.
func readmeSudoers(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "labpool ALL=(labpool-jobs) ") {
			return strings.TrimSpace(line)
		}
	}
	t.Fatal("README.md documents no sudoers rule (a line starting \"labpool ALL=(labpool-jobs) \")")
	return ""
}

// TestRealSudoRule: the agent runs as an ordinary Unix user, with
// exactly the README's sudoers rule (its user and job account named, the
// labpool binary where this test put it). Its user runs nothing else as
// the account (a shell, another verb of labpool) nor as root; the agent
// itself (TestSudoAgentChild, this test binary run as that user)
// submits, follows the output, cancels, reads the output of an ended job
// it cannot open itself, and refuses an output swapped for a link to its
// own key or for a FIFO.
func TestRealSudoRule(t *testing.T) {
	c := needSlurm(t)
	agentUser, account := slurmtest.AddUser(t), slurmtest.AddUser(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := slurmtest.Runnable(t, self) // this binary stands for labpool: TestMain serves its verb
	rule := readmeSudoers(t)
	rule = agentUser + " ALL=(" + account + ") " + strings.TrimPrefix(rule, "labpool ALL=(labpool-jobs) ")
	rule = strings.ReplaceAll(rule, "/usr/local/bin/labpool", bin)
	slurmtest.InstallSudoers(t, rule)
	t.Logf("sudoers: %s", rule)

	for _, tt := range []struct {
		name string
		args []string
	}{
		{"a shell as the account", []string{"-u", account, "sh", "-c", "id"}},
		{"id as the account", []string{"-u", account, "id"}},
		{"cat as the account", []string{"-u", account, "cat", "/etc/hostname"}},
		{"another verb of labpool", []string{"-u", account, bin, "agent"}},
		{"labpool with no verb", []string{"-u", account, bin}},
		{"the opener as root", []string{"-u", "root", bin, OpenOutputVerb, "/etc/shadow"}},
		{"sbatch as root", []string{"-u", "root", "sbatch", "--version"}},
		{"a shell as root", []string{"sh", "-c", "id"}},
		{"mkdir as another user", []string{"-u", agentUser, "mkdir", "-p", "/tmp/x"}},
	} {
		argv := append(slurmtest.AsUser(t, agentUser), append([]string{"sudo", "-n"}, tt.args...)...)
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err == nil {
			t.Errorf("%s: sudo %q ran: %s", tt.name, tt.args, out)
		}
	}
	argv := append(slurmtest.AsUser(t, agentUser), "sudo", "-n", "-u", account, "--preserve-env=SLURM_CONF", "sbatch", "--version")
	sbatch := exec.Command(argv[0], argv[1:]...)
	sbatch.Env = append(os.Environ(), c.Env()...)
	if out, err := sbatch.CombinedOutput(); err != nil {
		t.Fatalf("sudo -n -u %s sbatch --version as %s: %v: %s", account, agentUser, err, out)
	}

	cfg, err := json.Marshal(sudoAgent{Conf: c.Conf, StateDir: slurmtest.OwnedDir(t, agentUser), Account: account,
		Opener: []string{bin, OpenOutputVerb}})
	if err != nil {
		t.Fatal(err)
	}
	argv = append(append(c.Wrap(), slurmtest.AsUser(t, agentUser)...), bin, "-test.run=^TestSudoAgentChild$", "-test.v", "-test.count=1")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), sudoChildEnv + "=" + string(cfg)}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSudoAgentChild") {
		t.Fatalf("the agent run as %s: %v\n%s", agentUser, err, out)
	}
}

// TestSudoAgentChild is the agent of TestRealSudoRule, run as an
// ordinary user: it skips itself anywhere else.
func TestSudoAgentChild(t *testing.T) {
	raw := os.Getenv(sudoChildEnv)
	if raw == "" {
		t.Skip("run by TestRealSudoRule")
	}
	var sa sudoAgent
	if err := json.Unmarshal([]byte(raw), &sa); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		t.Fatal("the agent of this test must not be root")
	}
	run := &CmdRunner{Conf: sa.Conf, Timeout: 20 * time.Second, Switch: SwitchSudo, Opener: sa.Opener}
	e, err := New(context.Background(), Config{Conf: sa.Conf, StateDir: sa.StateDir, JobUser: sa.Account,
		Runner: run, Tick: 200 * time.Millisecond, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(sa.StateDir, "key.pem")
	secret := fmt.Sprintf("PRIVATE KEY of the agent %d", os.Getpid())
	if err := os.WriteFile(key, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}

	token := fmt.Sprintf("hf_sudo_%d", os.Getpid())
	st := start(t, e, jobs.Task{ID: "sudo", Env: []string{"HF_TOKEN=" + token},
		Cmd: []string{"sh", "-c", `echo "$(id -un) $HF_TOKEN"; exec sleep 300`}})
	waitState(t, e, st.Handle, running)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc, err := e.Logs(ctx, st.Handle, true, 0)
	if err != nil {
		t.Fatalf("Logs -f as %s: %v", e.cfg.User, err)
	}
	first, err := bufio.NewReader(rc).ReadString('\n')
	rc.Close()
	if want := sa.Account + " " + token + "\n"; first != want || err != nil {
		t.Errorf("followed %q, %v; want %q", first, err, want)
	}
	if f, err := os.Open(e.record(st.Handle).Output); err == nil {
		f.Close()
		t.Errorf("the agent's user opens the account's output itself: this test proves nothing")
	}
	if err := e.Stop(context.Background(), st.Handle, 0); err != nil {
		t.Fatalf("Stop through sudo: %v", err)
	}
	if got := waitState(t, e, st.Handle, ended); got.State != jobs.TaskCancelled {
		t.Errorf("stopped job is %s, want cancelled", got.State)
	}
	if out, _, _ := strings.Cut(output(t, e, st.Handle), "\n"); out != sa.Account+" "+token {
		t.Errorf("the ended job's output starts %q, want %q", out, sa.Account+" "+token)
	}

	for _, swap := range []string{`ln -s "$1" "$out"`, `mkfifo "$out"`} {
		st := start(t, e, jobs.Task{ID: "swap", Cmd: []string{"sh", "-c",
			`out="$HOME/.labpool-slurm/slurm-$SLURM_JOB_ID.out"; rm -f "$out"; ` + swap, "sh", key}})
		waitState(t, e, st.Handle, ended)
		rc, err := e.Logs(context.Background(), st.Handle, false, 0)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(rc, 4096))
			rc.Close()
			t.Fatalf("%s: Logs accepted, read %q", swap, b)
		}
		if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "rule: a job's output is its account's file") {
			t.Errorf("%s: Logs = %v, want a refusal naming the rule", swap, err)
		}
	}
	if err := e.Remove(context.Background(), st.Handle); err != nil {
		t.Errorf("Remove through sudo: %v", err)
	}
}
