package containers

import (
	"slices"
	"strconv"
	"strings"
)

// guardChain and forwardChain hold the rules that keep jobs off this host
// and off each other; the agent owns them (flushes and refills them) and
// jumps to them from INPUT and FORWARD for job bridges only.
const (
	guardChain   = "LABPOOL-JOBS"
	forwardChain = "LABPOOL-JOBS-FWD"
)

// DefaultGuardPorts are labpool's own ports, shut to jobs in every mode:
// QUIC (UDP) and TCP 7420.
var DefaultGuardPorts = []int{7420}

// guardRules are the iptables (and ip6tables) commands, after -w, that
// fill the guard chains: a job's packets to this host are dropped unless
// they answer a connection the host opened (the agent's tunnels to the
// job), or come from a NetHost network to another port than labpool's;
// between job bridges nothing passes. The jumps come last (see jumps).
func guardRules(ports []int) [][]string {
	ports = slices.Clone(ports)
	slices.Sort(ports)
	ports = slices.Compact(ports)
	list := make([]string, 0, len(ports))
	for _, p := range ports {
		list = append(list, strconv.Itoa(p))
	}
	dports := strings.Join(list, ",")
	rules := [][]string{
		{"-A", guardChain, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"},
	}
	if dports != "" {
		for _, proto := range []string{"tcp", "udp"} {
			rules = append(rules, []string{"-A", guardChain, "-i", bridgePrefix[NetHost] + "+", "-p", proto,
				"-m", "multiport", "--dports", dports, "-j", "DROP"})
		}
	}
	rules = append(rules,
		[]string{"-A", guardChain, "-i", bridgePrefix[NetHost] + "+", "-j", "RETURN"},
		[]string{"-A", guardChain, "-j", "DROP"})
	for _, mode := range NetworkModes {
		rules = append(rules, []string{"-A", forwardChain, "-o", bridgePrefix[mode] + "+", "-j", "DROP"})
	}
	return rules
}

// jumps are the rules that send job bridges' packets to the guard chains,
// as (chain, rule) for -C and -I chain 1.
func jumps() [][2][]string {
	var out [][2][]string
	for _, mode := range NetworkModes {
		in := bridgePrefix[mode] + "+"
		out = append(out,
			[2][]string{{"INPUT"}, {"-i", in, "-j", guardChain}},
			[2][]string{{"FORWARD"}, {"-i", in, "-j", forwardChain}})
	}
	return out
}
