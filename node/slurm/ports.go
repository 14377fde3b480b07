package slurm

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// holdsScript runs as a step of the job on the node a tunnel dials: it
// succeeds when a process of the job (SLURM_JOB_ID in its environment, set
// by slurmstepd) listens on the port. Every job of the agent runs as one
// Unix user, on nodes with other services: a declared port alone would let
// one member's job reach another's service, or the node's own (sshd,
// slurmd), through its tunnel.
//
//go:embed holds.sh
var holdsScript string

// holdsFresh is how long a port found held is believed without asking the
// node again: a browser opens many connections at once.
const holdsFresh = 10 * time.Second

var _ jobs.PortHolder = (*Executor)(nil)

// portChecks remembers the ports found held, by job and port.
type portChecks struct {
	mu   sync.Mutex
	seen map[string]time.Time // "job/port" -> when found held
}

// HoldsPort says whether a process of Slurm job handle listens on port on
// the node its tunnels dial (its first node): a step of the job (srun
// --overlap) looks for the listening socket among the job's processes. It
// answers nil when one does, and an error naming the rule otherwise.
func (e *Executor) HoldsPort(ctx context.Context, handle string, port int) error {
	if !validHandle(handle) {
		return errHandle(handle)
	}
	if port <= 0 || port > 65535 {
		return fmt.Errorf("port %d: not a TCP port", port)
	}
	key := handle + "/" + strconv.Itoa(port)
	now := time.Now()
	e.ports.mu.Lock()
	at, ok := e.ports.seen[key]
	e.ports.mu.Unlock()
	if ok && now.Sub(at) < holdsFresh && now.Sub(at) >= 0 {
		return nil
	}
	st, err := e.Inspect(ctx, handle)
	if err != nil {
		return err
	}
	if st.State != jobs.TaskRunning || len(st.Hosts) == 0 {
		return fmt.Errorf("slurm job %s does not run: no port of it is reached (rule: tunnel-own-port)", handle)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := e.runAsJob(ctx, handle, "srun", "--jobid="+handle, "--overlap", "--nodes=1", "--ntasks=1",
		"--nodelist="+st.Hosts[0], "--quiet", "sh", "-c", holdsScript, "sh", strconv.Itoa(port), handle)
	if err != nil {
		why := strings.TrimSpace(string(out))
		if why == "" {
			why = err.Error()
		}
		return fmt.Errorf("port %d on %s is not held by slurm job %s (%s): a tunnel reaches only a port its job listens on (rule: tunnel-own-port)",
			port, st.Hosts[0], handle, why)
	}
	e.ports.mu.Lock()
	if e.ports.seen == nil {
		e.ports.seen = map[string]time.Time{}
	}
	for k, t := range e.ports.seen {
		if now.Sub(t) >= holdsFresh {
			delete(e.ports.seen, k)
		}
	}
	e.ports.seen[key] = now
	e.ports.mu.Unlock()
	return nil
}
