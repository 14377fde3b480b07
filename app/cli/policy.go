package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/containers"
	"github.com/labpool/labpool/node/jobs"
	"github.com/spf13/cobra"
)

// policyCmd shows this machine's policy, or sets the parts its flags name.
func policyCmd(g *globals) *cobra.Command {
	var launch, defMem, maxMem, idleReclaim, jobNet, webhook, webhookPrivate string
	var idleBelow float64
	var maxGPUs int
	var allowRoot, asJSON bool
	var slurmUsers, slurmNodes []string
	var rf reservePolicyFlags
	var lf lendFlags
	c := &cobra.Command{
		Use:   "policy [--launch members|admins|nobody] [--max-gpus-per-member N] [--json]",
		Short: "Show or set this machine's own say: who launches here, how many GPUs one member holds",
		Long: `Show this machine's policy, or set the parts named by flags. The policy is this
machine's alone (kept in its local settings, set only through its local socket):
  --launch members     members, admins and owners of the pool launch jobs here (default)
  --launch admins      only admins and owners do
  --launch nobody      only this machine's own user does
  --max-gpus-per-member N   GPUs one device may hold here, queued and running (0 = no limit)
  --idle-reclaim 2h --idle-below 5   stop a job whose GPUs all stayed under 5% for 2 h
                       (its owner sees a countdown first; 0 = off, the default)
  --job-network outside   what a job reaches besides the tunnels to it:
                       isolated  nothing (no LAN, no internet, not this machine)
                       outside   the LAN and the internet, not this machine (default)
                       host      also this machine's other services
                       In every mode a job reaches no other job and none of this
                       machine's labpool ports; it applies to jobs launched from now on.
  --webhook off        this machine posts no alert to the pool's webhook (on: it does, the default)
  --webhook-private allow   its posts may reach private addresses (10/8, 172.16/12,
                       192.168/16, 100.64/10, fc00::/7), e.g. a chat server on the lab's
                       network; refuse (the default). Loopback, link-local and cloud
                       metadata addresses are refused whatever the policy
  --lend idle --lend-after 15m --yield pause --grace 10m --lend-hours "mon-fri 19:00-08:00"
                       lend this machine to the pool's guests in the lend hours once you
                       have been away 15 min (no GPU process of yours, your desktop idle,
                       "I'm using it" off in the window); when you come back no new guest
                       job starts, guests are warned, and after the grace they are paused
                       (or stopped: --yield stop). --lend never: no guests; --lend always:
                       guests in the lend hours whatever you do (the default, at any time)
  --slurm-user NAME=UNIXUSER   on a Slurm cluster's agent: member NAME's jobs run as
                       UNIXUSER (its own account); members without one run as the
                       agent's --slurm-job-user. NAME= removes NAME's (repeatable)
  --reserve members    who may reserve this machine's GPUs (labpool reserve):
                       members (default), admins or nobody (but this machine's user)
  --reserve-max-gpus N --reserve-max-hours 24h --reserve-ahead 30d --reserve-per-member 8
                       at most N GPUs (0: all) and 24 h per reservation, starting
                       at most 30 days ahead, 8 to come per member (the defaults)
  --reserve-warn 15m   others' jobs on reserved GPUs are told this long before the
                       start (default 15m), and stopped at the start
  --slurm-node NODE=MACHINE    on a Slurm cluster's agent: only the labpool agent MACHINE
                       speaks for compute node NODE (its idle samples, its GPUs in
                       stats); NODE= unpins it (repeatable)
Requests beyond the policy are refused with the rule's name, e.g.
"policy launch=admins: only admins and owners launch on this machine".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var u app.PolicyUpdate
			fl := cmd.Flags()
			if fl.Changed("launch") {
				u.Launch = &launch
			}
			if fl.Changed("max-gpus-per-member") {
				u.MaxGPUsPerMember = &maxGPUs
			}
			for _, s := range []struct {
				flag, in string
				dst      **int64
			}{{"default-memory", defMem, &u.DefaultMemoryBytes}, {"max-memory", maxMem, &u.MaxMemoryBytes}} {
				if fl.Changed(s.flag) {
					n, err := jobs.ParseSize(s.in)
					if err != nil {
						return usageError{fmt.Errorf("--%s: %w", s.flag, err)}
					}
					*s.dst = &n
				}
			}
			if fl.Changed("job-network") {
				u.JobNetwork = &jobNet
			}
			if fl.Changed("allow-root") {
				u.AllowRoot = &allowRoot
			}
			if err := idleFlags(fl.Changed("idle-reclaim"), idleReclaim, fl.Changed("idle-below"), idleBelow, &u); err != nil {
				return err
			}
			if err := webhookFlags(fl.Changed("webhook"), webhook, fl.Changed("webhook-private"), webhookPrivate, &u); err != nil {
				return err
			}
			if err := rf.apply(fl, &u); err != nil {
				return err
			}
			if err := lf.apply(fl, &u); err != nil {
				return err
			}
			var err error
			if u.SlurmUsers, err = pairsFlag("slurm-user", slurmUsers); err != nil {
				return err
			}
			if u.SlurmNodes, err = pairsFlag("slurm-node", slurmNodes); err != nil {
				return err
			}
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			var p app.Policy
			if u.IsZero() {
				p, err = c.Policy(cmd.Context())
			} else {
				p, err = c.SetPolicy(cmd.Context(), u)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), p)
			}
			return writePolicy(cmd.OutOrStdout(), p)
		},
	}
	fl := c.Flags()
	fl.StringVar(&launch, "launch", "", "who launches jobs here: members, admins or nobody")
	fl.IntVar(&maxGPUs, "max-gpus-per-member", 0, "GPUs one member may hold here, queued and running (0 = no limit)")
	fl.StringVar(&defMem, "default-memory", "", "memory limit of a job that asks none, e.g. 8g")
	fl.StringVar(&maxMem, "max-memory", "", "the most memory a job may ask, e.g. 64g (0 = no limit)")
	fl.BoolVar(&allowRoot, "allow-root", false, "let jobs run as root although this machine's Docker does not remap users (root in a job is then root on this machine's files)")
	fl.StringVar(&idleReclaim, "idle-reclaim", "", "stop a job whose GPUs stayed idle this long, after a warning, e.g. 2h (0 = off, the default)")
	fl.Float64Var(&idleBelow, "idle-below", 5, "a GPU under this utilization (%) is idle, for --idle-reclaim")
	fl.StringVar(&jobNet, "job-network", "", "what a job reaches besides its tunnels: isolated, outside (default) or host")
	fl.StringVar(&webhook, "webhook", "", "post this machine's alerts to the pool's webhook: on or off")
	fl.StringVar(&webhookPrivate, "webhook-private", "", "let webhook posts reach private addresses: allow or refuse")
	fl.StringArrayVar(&slurmUsers, "slurm-user", nil, "a member's Unix account on this Slurm cluster: NAME=UNIXUSER (NAME= removes it; repeatable)")
	fl.StringArrayVar(&slurmNodes, "slurm-node", nil, "the machine that speaks for a compute node of this Slurm cluster: NODE=MACHINE (NODE= unpins it; repeatable)")
	rf.flags(fl)
	lf.add(fl)
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// pairsFlag reads the KEY=VALUE entries of a repeatable flag; nil for
// none.
func pairsFlag(flag string, entries []string) (map[string]string, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return nil, usageError{fmt.Errorf("--%s %q: give NAME=VALUE (NAME= to remove)", flag, e)}
		}
		m[k] = v
	}
	return m, nil
}

func writePolicy(w io.Writer, p app.Policy) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	gpus := "no limit"
	if p.MaxGPUsPerMember > 0 {
		gpus = fmt.Sprint(p.MaxGPUsPerMember)
	}
	maxMem := "no limit"
	if p.MaxMemoryBytes > 0 {
		maxMem = Bytes(uint64(p.MaxMemoryBytes))
	}
	root := "no"
	if p.AllowRoot {
		root = "yes (root in a job is root on this machine's files)"
	}
	fmt.Fprintf(tw, "launch\t%s\n", p.Launch)
	fmt.Fprintf(tw, "max gpus per member\t%s\n", gpus)
	fmt.Fprintf(tw, "default memory\t%s\n", Bytes(uint64(p.DefaultMemoryBytes)))
	fmt.Fprintf(tw, "max memory\t%s\n", maxMem)
	fmt.Fprintf(tw, "log cap\t%s\n", Bytes(uint64(p.LogMaxBytes)))
	fmt.Fprintf(tw, "job user\t%s\n", p.JobUser)
	fmt.Fprintf(tw, "allow root\t%s\n", root)
	fmt.Fprintf(tw, "idle reclaim\t%s\n", idleReclaimText(p))
	fmt.Fprintf(tw, "job network\t%s\n", jobNetworkText(p.JobNetwork))
	fmt.Fprintf(tw, "webhook\t%s\n", webhookText(p))
	fmt.Fprintf(tw, "lend\t%s\n", lendText(p.Lend))
	for _, m := range sortedKeys(p.SlurmUsers) {
		fmt.Fprintf(tw, "slurm user\t%s runs as %s\n", m, p.SlurmUsers[m])
	}
	for _, n := range sortedKeys(p.SlurmNodes) {
		fmt.Fprintf(tw, "slurm node\t%s is %s\n", n, p.SlurmNodes[n])
	}
	fmt.Fprintf(tw, "reserve\t%s\n", reservePolicyText(p.Reserve))
	return tw.Flush()
}

// jobNetworkText says what a job reaches under the policy's job network.
func jobNetworkText(mode string) string {
	switch mode {
	case containers.NetIsolated:
		return "isolated (only its tunnels reach a job; it reaches nothing)"
	case containers.NetHost:
		return "host (the LAN, the internet and this machine's other services; no other job, no labpool port)"
	}
	return "outside (the LAN and the internet; not this machine, no other job)"
}

// sortedKeys is m's keys in order.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
