//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labpool/labpool/node/jobs"
	"github.com/labpool/labpool/node/slurm/slurmtest"
)

// TestSlurmJobAccount: the attacks of the audit, from a member's plain
// `labpool run --node cluster -- sh -c ...` on a cluster whose agent runs
// as root. Mallory has no account of her own (her jobs run as the
// cluster's job account); the laptop's member is mapped to an account of
// his own by the cluster machine's owner. Mallory's job runs as the job
// account, not as the agent's user; it reads neither the agent's key nor
// its socket, nor the laptop's token or output; its scancel of the
// laptop's job fails; and the symbolic link it puts in place of its own
// output makes `labpool logs` refuse, never print the key.
func TestSlurmJobAccount(t *testing.T) {
	l := newLAN(t, "cluster", "laptop", "mallory")
	cl, laptop, mallory := l.host("cluster"), l.host("laptop"), l.host("mallory")
	c := slurmtest.Start(t, slurmtest.Options{Net: &slurmtest.Net{
		Switch: l.prefix + "sw", Bridge: "br0", Controller: cl.ns, ControllerAddr: cl.ip,
		NodeAddrs: []string{fmt.Sprintf("10.231.%d.101/24", l.subnet), fmt.Sprintf("10.231.%d.102/24", l.subnet)},
	}})
	jobUser, ownUser := slurmtest.AddUser(t), slurmtest.AddUser(t)
	cl.env = append(cl.env, c.Env()...)
	cl.start("agent", "--name", "cluster", "--iface", "eth0", "--listen", ":7420", "--slurm", "--slurm-job-user", jobUser)
	laptop.agent()
	mallory.agent()
	for _, h := range []*host{cl, laptop, mallory} {
		h.waitDaemon()
	}
	joinAll(t, cl, laptop, mallory)
	waitFor(t, 20*time.Second, "the cluster live on the laptop and mallory", func() error {
		if err := liveNodes(laptop, "cluster"); err != nil {
			return err
		}
		return liveNodes(mallory, "cluster")
	})
	mustCLI(t, cl, "policy", "--slurm-user", "laptop="+ownUser)
	s := &slurmSession{c: c, laptop: laptop}
	m := &slurmSession{c: c, laptop: mallory}

	secret, err := os.ReadFile(filepath.Join(cl.data, "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	keyLine := strings.Split(strings.TrimSpace(string(secret)), "\n")[1] // the key's base64, not its header
	token := fmt.Sprintf("hf_laptop_%d", os.Getpid())
	victim := s.launch(t, jobs.Spec{Env: []string{"HF_TOKEN=" + token},
		Cmd: []string{"sh", "-c", "echo output of the laptop; exec sleep 600"}})
	vj := s.wait(t, victim, "running")

	spy := m.launch(t, jobs.Spec{Cmd: []string{"sh", "-c", `
id -un; pwd
cat "$1"/key.pem
[ -w "$1"/labpool.sock ] && echo SOCKET-WRITABLE
cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep HF_TOKEN
cat /tmp/*/*/home/.labpool-slurm/*.out 2>/dev/null | grep "output of the laptop"
scancel "$2" && echo CANCELLED
true`, "sh", cl.data, vj.Container}})
	m.wait(t, spy, "exited")
	out := mustCLI(t, mallory, "logs", spy)
	if lines := strings.Fields(out); len(lines) < 2 || lines[0] != jobUser || lines[0] == "root" {
		t.Errorf("mallory's job says %q: want it to run as the job account %s", out, jobUser)
	}
	for _, leak := range []string{keyLine, "SOCKET-WRITABLE", token, "output of the laptop", "CANCELLED"} {
		if strings.Contains(out, leak) {
			t.Errorf("mallory's job reached %q:\n%s", leak, out)
		}
	}
	if j := s.wait(t, victim, "running"); j.Container != vj.Container {
		t.Errorf("the laptop's job became %s", j.Container)
	}
	if got := strings.TrimSpace(mustCLI(t, laptop, "logs", victim)); got != "output of the laptop" {
		t.Errorf("the laptop's logs: %q", got)
	}

	swap := m.launch(t, jobs.Spec{Cmd: []string{"sh", "-c",
		`out="$HOME/.labpool-slurm/slurm-$SLURM_JOB_ID.out"; rm -f "$out"; ln -s "$1"/key.pem "$out"`, "sh", cl.data}})
	m.wait(t, swap, "exited")
	logs, errOut, code := mallory.cli("logs", swap)
	if strings.Contains(logs+errOut, keyLine) {
		t.Errorf("labpool logs printed the agent's key")
	}
	if code == 0 || !strings.Contains(errOut, "its account's file") {
		t.Errorf("logs of a job whose output is a link: exit %d %q %q, want a refusal naming the rule", code, logs, errOut)
	}

	// A forged comment: mallory's job submits a Slurm job of its own (as
	// the job account) that claims the laptop's job. The cluster's agent,
	// restarted, still tracks the laptop's job by its own record: logs
	// show the laptop's output and stop cancels the laptop's job.
	forger := m.launch(t, jobs.Spec{Cmd: []string{"sh", "-c",
		`sbatch --parsable --comment="labpool:job=$1,owner=$2" --wrap="echo output of mallory; exec sleep 600"`,
		"sh", victim, vj.Owner}})
	m.wait(t, forger, "exited")
	forged := strings.TrimSpace(mustCLI(t, mallory, "logs", forger))
	if forged == "" || strings.Contains(forged, " ") {
		t.Fatalf("mallory's sbatch printed %q, not a job ID", forged)
	}
	t.Cleanup(func() { c.Command(context.Background(), "scancel", forged).Run() })
	waitFor(t, 20*time.Second, "the forged job running", func() error {
		if st := s.squeueState(t, forged); st != "RUNNING" {
			return fmt.Errorf("forged job %s is %q", forged, st)
		}
		return nil
	})
	cl.kill()
	cl.start("agent", "--name", "cluster", "--iface", "eth0", "--listen", ":7420", "--slurm", "--slurm-job-user", jobUser)
	cl.waitDaemon()
	waitFor(t, 20*time.Second, "the cluster live again", func() error { return liveNodes(laptop, "cluster") })
	if j := s.wait(t, victim, "running"); j.Container != vj.Container {
		t.Errorf("after the restart the laptop's job is Slurm job %s, was %s (the forged job is %s)", j.Container, vj.Container, forged)
	}
	if got := strings.TrimSpace(mustCLI(t, laptop, "logs", victim)); got != "output of the laptop" {
		t.Errorf("the laptop's logs after the restart: %q", got)
	}
	mustCLI(t, laptop, "stop", victim)
	s.wait(t, victim, "exited")
	if st := s.squeueState(t, vj.Container); st != "CANCELLED" {
		t.Errorf("the laptop's Slurm job %s is %s after stop, want CANCELLED", vj.Container, st)
	}
	if st := s.squeueState(t, forged); st != "RUNNING" {
		t.Errorf("the forged job %s is %s: stop reached it", forged, st)
	}
}
