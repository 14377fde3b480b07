package slurm

import (
	"context"
	_ "embed"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labpool/labpool/node/jobs"
)

// holdsScript runs as a step of the job on the node a tunnel dials: it
// succeeds when the sockets that would take the tunnel's connection (to
// the node's IPv4 address and the port: one bound to it, else to
// 0.0.0.0, else a dual-stack ::) belong to processes of the job
// (SLURM_JOB_ID in their environment, set by slurmstepd). The job's
// socket on the port of another address or family (an IPv6-only [::])
// proves nothing: the tunnel would reach whoever holds the IPv4 port. Every job of the agent runs as one
// Unix user, on nodes with other services: a declared port alone would let
// one member's job reach another's service, or the node's own (sshd,
// slurmd), through its tunnel.
//
//go:embed holds.sh
var holdsScript string

// procNetAddr is an IPv4 address as /proc/net/tcp writes it: the four
// bytes as one little-endian word in hex (compute nodes are
// little-endian: x86-64, arm64, ppc64le).
func procNetAddr(ip netip.Addr) string {
	b := ip.As4()
	return fmt.Sprintf("%02X%02X%02X%02X", b[3], b[2], b[1], b[0])
}

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
	ip, err := netip.ParseAddr(st.Addr)
	if err != nil || !ip.Unmap().Is4() {
		return fmt.Errorf("slurm job %s runs on %s, whose address %q is not IPv4: a tunnel dials only an IPv4 address it checked (rule: tunnel-own-port)", handle, st.Hosts[0], st.Addr)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := e.runAsJob(ctx, handle, "srun", "--jobid="+handle, "--overlap", "--nodes=1", "--ntasks=1",
		"--nodelist="+st.Hosts[0], "--quiet", "sh", "-c", holdsScript, "sh", strconv.Itoa(port), handle, procNetAddr(ip.Unmap()))
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
