package containers

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// defaultFirewalls are iptables and, where the kernel has IPv6, ip6tables.
func defaultFirewalls() []firewall {
	fws := []firewall{{"iptables"}}
	if _, err := os.Stat("/proc/sys/net/ipv6"); err == nil {
		fws = append(fws, firewall{"ip6tables"})
	}
	return fws
}

// guardHost installs the host guard once per runtime (see guardRules) and
// then, at every call, makes sure its jumps still come first (see
// keepGuardFirst). A launch waits for it: no job starts on a host it could
// reach labpool's ports of, nor another job through Docker's own rules.
func (r *Runtime) guardHost() error {
	r.guardOnce.Do(func() {
		for _, fw := range r.firewalls {
			if r.guardErr = installGuard(fw, r.cfg.GuardPorts); r.guardErr != nil {
				return
			}
		}
		r.guardUp.Store(true)
	})
	if r.guardErr != nil {
		return r.guardErr
	}
	return r.keepGuardFirst()
}

// keepGuardFirst puts the guard's jumps back at the head of INPUT and
// FORWARD where something went above them: Docker inserts its own jumps
// and per-bridge ACCEPTs at the head of FORWARD when it starts and when it
// creates a network, and those would accept a job's packets before the
// guard saw them. It does nothing before the guard is installed.
func (r *Runtime) keepGuardFirst() error {
	if !r.guardUp.Load() {
		return nil
	}
	r.guardMu.Lock()
	defer r.guardMu.Unlock()
	for _, fw := range r.firewalls {
		if err := keepFirst(fw); err != nil {
			return guardError(err)
		}
	}
	return nil
}

// guardCheck is keepGuardFirst where no caller waits for its error (the
// event stream, the periodic check): a guard that cannot be put first
// again is logged at ERROR, once until it is first again, which is logged
// too. after says what prompted the check.
func (r *Runtime) guardCheck(after string) {
	if err := r.keepGuardFirst(); err != nil {
		if !r.guardBad.Swap(true) {
			r.log.Error("the host guard's rules cannot be put first again: jobs may reach this host's labpool ports and each other until they are (the agent needs root and iptables)",
				"after", after, "err", err)
		}
		return
	}
	if r.guardBad.Swap(false) {
		r.log.Info("the host guard's rules are first again", "after", after)
	}
}

// firewall is the command line of one iptables tool: "iptables", or the
// same tool run in another network namespace.
type firewall []string

// run runs the tool with -w and args.
func (fw firewall) run(args ...string) (string, error) {
	argv := append(slices.Clone(fw[1:]), "-w")
	out, err := exec.Command(fw[0], append(argv, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", fw[len(fw)-1], strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

func installGuard(fw firewall, ports []int) error {
	for _, chain := range []string{guardChain, forwardChain} {
		fw.run("-N", chain) // fails when it exists: the flush below is what counts
		if _, err := fw.run("-F", chain); err != nil {
			return guardError(err)
		}
	}
	for _, rule := range guardRules(ports) {
		if _, err := fw.run(rule...); err != nil {
			return guardError(err)
		}
	}
	if err := keepFirst(fw); err != nil {
		return guardError(err)
	}
	return nil
}

// keepFirst makes the guard's jumps the first rules of their chains, in
// order, each once. Where they are not, it inserts them at the head first
// and only then deletes the copies further down, so that no packet passes
// while they move.
func keepFirst(fw firewall) error {
	for _, chain := range []string{"INPUT", "FORWARD"} {
		want := jumpsOf(chain)
		rules, err := chainRules(fw, chain)
		if err != nil {
			return err
		}
		if len(rules) >= len(want) && slices.Equal(rules[:len(want)], want) && !slices.ContainsFunc(rules[len(want):], func(r string) bool { return slices.Contains(want, r) }) {
			continue
		}
		for i := len(want) - 1; i >= 0; i-- {
			if _, err := fw.run(append([]string{"-I", chain, "1"}, strings.Fields(want[i])...)...); err != nil {
				return err
			}
		}
		if rules, err = chainRules(fw, chain); err != nil {
			return err
		}
		for i := len(rules) - 1; i >= len(want); i-- { // from the bottom: the numbers above stay
			if slices.Contains(want, rules[i]) {
				if _, err := fw.run("-D", chain, strconv.Itoa(i+1)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// jumpsOf are the guard's jumps in chain, as iptables -S prints their
// rule after "-A chain ".
func jumpsOf(chain string) []string {
	var out []string
	for _, j := range jumps() {
		if j[0][0] == chain {
			out = append(out, strings.Join(j[1], " "))
		}
	}
	return out
}

// chainRules are the rules of chain, in order, as iptables -S prints
// them after "-A chain ".
func chainRules(fw firewall, chain string) ([]string, error) {
	out, err := fw.run("-S", chain)
	if err != nil {
		return nil, err
	}
	var rules []string
	for _, line := range strings.Split(out, "\n") {
		if r, ok := strings.CutPrefix(strings.TrimSpace(line), "-A "+chain+" "); ok {
			rules = append(rules, r)
		}
	}
	return rules, nil
}

// ErrNoGuard means the host guard could not be installed: no job starts.
var ErrNoGuard = errors.New("cannot keep jobs off this host's labpool ports (the agent needs root and iptables)")

func guardError(err error) error {
	if errors.Is(err, ErrNoGuard) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrNoGuard, err)
}
