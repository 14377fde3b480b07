//go:build linux

package slurm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm/slurmtest"
)

// The attacks of a member's job on the cluster agent, the agent running
// as root (as the tests do): each job below is what a member may launch.

// agentSecret writes a file in the executor's state directory, standing
// for the agent's key.pem, and returns its path and content.
func agentSecret(t *testing.T, e *Executor) (string, string) {
	t.Helper()
	secret := fmt.Sprintf("PRIVATE KEY of the agent %d", os.Getpid())
	path := filepath.Join(e.cfg.StateDir, "key.pem")
	if err := os.WriteFile(path, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, secret
}

// TestRealJobIsNotTheAgent: a job runs as its account, not as the
// agent's user, in the account's home; it cannot read the agent's state
// (its key), list it, or find another job's script there.
func TestRealJobIsNotTheAgent(t *testing.T) {
	c := needSlurm(t)
	e := newRealExecutor(t, c)
	key, secret := agentSecret(t, e)
	st := start(t, e, jobs.Task{ID: "spy", Cmd: []string{"sh", "-c",
		`echo "uid=$(id -un) pwd=$(pwd)"; cat "$1"; ls "$2"; true`, "sh", key, e.cfg.StateDir}})
	waitState(t, e, st.Handle, ended)
	out := output(t, e, st.Handle)
	a, err := e.account(e.cfg.JobUser)
	if err != nil {
		t.Fatal(err)
	}
	if want := "uid=" + a.Name + " pwd=" + a.Home; !strings.Contains(out, want) {
		t.Errorf("the job says %q, want %q", out, want)
	}
	if strings.Contains(out, secret) || strings.Contains(out, "jobs") {
		t.Errorf("the job read the agent's state: %q", out)
	}
}

// TestRealJobEnvNotOnDisk: a job's environment values (a member's
// token) are in no file of the agent or the account, nor in sbatch's
// argv: the job gets them all the same.
func TestRealJobEnvNotOnDisk(t *testing.T) {
	c := needSlurm(t)
	e := newRealExecutor(t, c)
	token := fmt.Sprintf("hf_secret_%d", os.Getpid())
	st := start(t, e, jobs.Task{ID: "token", Env: []string{"HF_TOKEN=" + token},
		Cmd: []string{"sh", "-c", `echo "token=$HF_TOKEN"`}})
	waitState(t, e, st.Handle, ended)
	if out := output(t, e, st.Handle); strings.TrimSpace(out) != "token="+token {
		t.Errorf("the job saw %q, want its token", out)
	}
	a, err := e.account(e.cfg.JobUser)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{e.cfg.StateDir, a.Home} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if b, _ := os.ReadFile(p); strings.Contains(string(b), token) && !strings.HasSuffix(p, ".out") {
				t.Errorf("%s holds the job's token", p)
			}
			return nil
		})
	}
	if script := c.Run(t, "scontrol", "write", "batch_script", st.Handle, "-"); strings.Contains(script, token) {
		t.Errorf("the batch script Slurm keeps holds the token:\n%s", script)
	}
}

// TestRealOutputLinkRefused: a job that swaps its output file for a
// symbolic link to the agent's key gets an error from Logs, never the
// key; so does one that swaps it for a FIFO (Logs does not hang).
func TestRealOutputLinkRefused(t *testing.T) {
	c := needSlurm(t)
	e := newRealExecutor(t, c)
	key, secret := agentSecret(t, e)
	for _, swap := range []string{`ln -s "$1" "$out"`, `mkfifo "$out"`} {
		st := start(t, e, jobs.Task{ID: "swap", Cmd: []string{"sh", "-c",
			`out="$HOME/.labpool-slurm/slurm-$SLURM_JOB_ID.out"; rm -f "$out"; ` + swap, "sh", key}})
		waitState(t, e, st.Handle, ended)
		rc, err := e.Logs(context.Background(), st.Handle, false, 0)
		if err == nil {
			b := make([]byte, 4096)
			n, _ := rc.Read(b)
			rc.Close()
			t.Fatalf("%s: Logs accepted, read %q", swap, b[:n])
		}
		if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "rule: a job's output is its account's file") {
			t.Errorf("%s: Logs = %v, want a refusal naming the rule", swap, err)
		}
	}
}

// TestRealAccountsApart: members mapped to accounts of their own cannot
// reach each other's jobs: neither the environment (a token) of a
// running job, nor its output, nor scancel.
func TestRealAccountsApart(t *testing.T) {
	c := needSlurm(t)
	cfg := realConfig(t, c)
	victim, attacker := cfg.JobUser, slurmtest.AddUser(t)
	cfg.UserFor = func(owner string) string {
		if owner == "ATTACKER" {
			return attacker
		}
		return ""
	}
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	token := fmt.Sprintf("hf_victim_%d", os.Getpid())
	v := start(t, e, jobs.Task{ID: "victim", Owner: "VICTIM", Env: []string{"HF_TOKEN=" + token},
		Cmd: []string{"sh", "-c", `echo "output of the victim"; exec sleep 300`}})
	waitState(t, e, v.Handle, running)
	va, _ := e.account(victim)
	a := start(t, e, jobs.Task{ID: "attack", Owner: "ATTACKER", Cmd: []string{"sh", "-c",
		`cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep HF_TOKEN; cat "$1"/.labpool-slurm/*.out; scancel "$2"; true`,
		"sh", va.Home, v.Handle}})
	waitState(t, e, a.Handle, ended)
	out := output(t, e, a.Handle)
	if strings.Contains(out, token) || strings.Contains(out, "output of the victim") {
		t.Errorf("the attacker's job (%s) reached the victim's (%s): %q", attacker, victim, out)
	}
	if st, err := e.Inspect(context.Background(), v.Handle); err != nil || st.State != jobs.TaskRunning {
		t.Errorf("the victim's job after the attack: %+v, %v", st, err)
	}
}
