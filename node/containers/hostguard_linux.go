package containers

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// guardHost installs the host guard once per runtime (see guardRules),
// for IPv4 and, where the kernel has it, IPv6. A launch waits for it: no
// job starts on a host it could reach labpool's ports of.
func (r *Runtime) guardHost() error {
	r.guardOnce.Do(func() {
		r.guardErr = installGuard("iptables", r.cfg.GuardPorts)
		if r.guardErr == nil {
			if _, err := os.Stat("/proc/sys/net/ipv6"); err == nil {
				r.guardErr = installGuard("ip6tables", r.cfg.GuardPorts)
			}
		}
	})
	return r.guardErr
}

func installGuard(tool string, ports []int) error {
	run := func(args ...string) error {
		out, err := exec.Command(tool, append([]string{"-w"}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %v: %s", tool, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	for _, chain := range []string{guardChain, forwardChain} {
		run("-N", chain) // fails when it exists: the flush below is what counts
		if err := run("-F", chain); err != nil {
			return guardError(err)
		}
	}
	for _, rule := range guardRules(ports) {
		if err := run(rule...); err != nil {
			return guardError(err)
		}
	}
	for _, j := range jumps() {
		chain, rule := j[0][0], j[1]
		if run(append([]string{"-C", chain}, rule...)...) == nil {
			continue
		}
		if err := run(append([]string{"-I", chain, "1"}, rule...)...); err != nil {
			return guardError(err)
		}
	}
	return nil
}

// ErrNoGuard means the host guard could not be installed: no job starts.
var ErrNoGuard = errors.New("cannot keep jobs off this host's labpool ports (the agent needs root and iptables)")

func guardError(err error) error { return fmt.Errorf("%w: %v", ErrNoGuard, err) }
