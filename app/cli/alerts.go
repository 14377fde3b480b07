package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
	"github.com/spf13/cobra"
)

// alertsCmd groups the alert verbs; alone it lists the alerts.
func alertsCmd(g *globals) *cobra.Command {
	list := alertsListCmd(g)
	c := &cobra.Command{
		Use:   "alerts [list|rules|set|mute|mutes|pin|unpin|webhook]",
		Short: "Alerts of the pool: list them, show and set the rules, mute, list mutes, pin rules, set the pool's webhook",
		Long: `Alerts are evaluated on the machine they watch (from its own samples, so an alert that
fired while this laptop slept is listed when it wakes); "machine offline" is evaluated by
the others. Rules and the webhook are set by owners and admins and reach every machine.`,
		Args: cobra.NoArgs,
		RunE: list.RunE,
	}
	c.Flags().AddFlagSet(list.Flags())
	c.AddCommand(list, alertsRulesCmd(g), alertsSetCmd(g), alertsMuteCmd(g), alertsMutesCmd(g),
		alertsPinCmd(g, true), alertsPinCmd(g, false), alertsWebhookCmd(g))
	return c
}

func alertsListCmd(g *globals) *cobra.Command {
	var since string
	var active, asJSON bool
	c := &cobra.Command{
		Use:   "list [--since 7d] [--active] [--json]",
		Short: "List the alerts that fired since a time (a week by default) and those still active",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			secs := 0
			if since != "" {
				d, err := alertSpan(since)
				if err != nil {
					return usageError{fmt.Errorf("--since: %w", err)}
				}
				secs = int(d / time.Second)
			}
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			as, err := web.Call[[]app.Alert](cmd.Context(), c, http.MethodGet, "/api/v1/alerts?since="+strconv.Itoa(secs), nil)
			if err != nil {
				return err
			}
			if active {
				kept := as[:0]
				for _, a := range as {
					if a.Active() {
						kept = append(kept, a)
					}
				}
				as = kept
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), as)
			}
			nodes, _ := c.Nodes(cmd.Context())
			return writeAlerts(cmd.OutOrStdout(), as, nodeNames(nodes), time.Now())
		},
	}
	c.Flags().StringVar(&since, "since", "", "how far back, e.g. 24h, 7d (default a week)")
	c.Flags().BoolVar(&active, "active", false, "only the alerts still firing")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func nodeNames(nodes []app.Node) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		out[n.ID] = n.Name
	}
	return out
}

func writeAlerts(w io.Writer, as []app.Alert, names map[string]string, now time.Time) error {
	if len(as) == 0 {
		_, err := fmt.Fprintln(w, "no alerts")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tSEVERITY\tMACHINE\tRULE\tFIRED\tMESSAGE\tID")
	for _, a := range as {
		state := "firing"
		if !a.Active() {
			state = "cleared " + Ago(*a.ClearedAt, now)
		}
		if a.Muted {
			state += " (muted)"
		}
		name := names[a.Node]
		if name == "" {
			name = a.Node
		}
		rule := a.Rule
		if len(a.Folded) > 0 { // one incident: the rules folded into it
			rule += " (+" + strings.Join(a.Folded, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", state, a.Severity, name, rule, Ago(a.FiredAt, now), a.Message, a.ID)
	}
	return tw.Flush()
}

func alertsRulesCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "rules [MACHINE] [--json]",
		Short: "Show the alert rules a machine evaluates (this one by default)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			path := "/api/v1/alerts/rules"
			if len(args) == 1 {
				path += "?node=" + url.QueryEscape(args[0])
			}
			rules, err := web.Call[[]app.AlertRule](cmd.Context(), c, http.MethodGet, path, nil)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rules)
			}
			return writeRules(cmd.OutOrStdout(), rules)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func writeRules(w io.Writer, rules []app.AlertRule) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tCONDITION\tFOR\tSEVERITY\tENABLED")
	for _, r := range rules {
		on := "yes"
		if !r.Enabled {
			on = "no"
		}
		fmt.Fprintf(tw, "%s\t%s %s %g\t%s\t%s\t%s\n", r.ID, r.Metric, r.Op, r.Threshold,
			time.Duration(r.ForSeconds)*time.Second, r.Severity, on)
	}
	return tw.Flush()
}

func alertsSetCmd(g *globals) *cobra.Command {
	var metric, op, forS, severity string
	var threshold float64
	var enable, disable bool
	c := &cobra.Command{
		Use:   "set RULE [--threshold N] [--for 2m] [--severity warning|critical] [--enable|--disable] [--metric M --op OP]",
		Short: "Change an alert rule (or add one) on every machine of the pool (owners and admins)",
		Example: `  labpool alerts set gpu-temp --threshold 90 --for 5m
  labpool alerts set gpu-idle-allocation --for 1h
  labpool alerts set gpu-throttle --disable
  labpool alerts set gpu-power --metric power_w --op '>' --threshold 300 --for 10m`,
		Args: cobra.ExactArgs(1),
	}
	actVerb(g, c, func(ctx context.Context, cl *web.Client, args []string) (string, error) {
		var u app.AlertRuleUpdate
		fl := c.Flags()
		if fl.Changed("metric") {
			u.Metric = &metric
		}
		if fl.Changed("op") {
			u.Op = &op
		}
		if fl.Changed("threshold") {
			u.Threshold = &threshold
		}
		if fl.Changed("severity") {
			u.Severity = &severity
		}
		if fl.Changed("for") {
			d, err := alertSpan(forS)
			if err != nil {
				return "", usageError{fmt.Errorf("--for: %w", err)}
			}
			secs := int(d / time.Second)
			u.ForSeconds = &secs
		}
		switch {
		case enable && disable:
			return "", usageError{fmt.Errorf("--enable and --disable: choose one")}
		case enable || disable:
			u.Enabled = &enable
		}
		if u == (app.AlertRuleUpdate{}) {
			return "", usageError{fmt.Errorf("nothing to change: give --threshold, --for, --severity, --enable or --disable")}
		}
		ch, err := web.Call[app.AlertRuleChange](ctx, cl, http.MethodPut, "/api/v1/alerts/rules/"+url.PathEscape(args[0]), u)
		if err != nil {
			return "", err
		}
		r := ch.Rule
		return fmt.Sprintf("rule %s: %s %s %g for %s (%s, enabled %v)%s", r.ID, r.Metric, r.Op, r.Threshold,
			time.Duration(r.ForSeconds)*time.Second, r.Severity, r.Enabled, appliedNote(ch.Applied)), nil
	})
	fl := c.Flags()
	fl.StringVar(&metric, "metric", "", "what the rule watches (a new rule): temp_c, granted_util_percent, util_percent, mem_used_percent, power_w, health, throttle, folder_disk_percent, cpu_percent, host_mem_percent, offline")
	fl.StringVar(&op, "op", "", "comparison with the threshold: >, >=, < or <=")
	fl.Float64Var(&threshold, "threshold", 0, "threshold, in the metric's unit")
	fl.StringVar(&forS, "for", "", "how long the condition holds before the alert fires, e.g. 2m, 30m")
	fl.StringVar(&severity, "severity", "", "warning or critical")
	fl.BoolVar(&enable, "enable", false, "evaluate the rule")
	fl.BoolVar(&disable, "disable", false, "stop evaluating the rule")
	return c
}

// appliedNote says where a change did not take.
func appliedNote(a app.Applied) string {
	if len(a.Failed) == 0 {
		return fmt.Sprintf("; set on %s", strings.Join(a.Applied, ", "))
	}
	var failed []string
	for _, f := range a.Failed {
		failed = append(failed, f.Name+" ("+f.Error+")")
	}
	return fmt.Sprintf("; set on %s; NOT on %s", strings.Join(a.Applied, ", "), strings.Join(failed, "; "))
}

func alertsMuteCmd(g *globals) *cobra.Command {
	var forS string
	var gpu int
	c := &cobra.Command{
		Use:   "mute ALERT-ID | MACHINE RULE [--gpu I] [--for 1h]",
		Short: "Mute an alert's rule on its machine (no webhook, no notification) for a while; --for 0 unmutes",
		Args:  cobra.RangeArgs(1, 2),
	}
	actVerb(g, c, func(ctx context.Context, cl *web.Client, args []string) (string, error) {
		d := time.Hour
		if forS != "" {
			var err error
			if d, err = alertSpan(forS); err != nil {
				return "", usageError{fmt.Errorf("--for: %w", err)}
			}
		}
		req := app.MuteRequest{Seconds: int(d / time.Second)}
		if len(args) == 1 {
			req.ID = args[0]
		} else {
			req.Node, req.Rule = args[0], args[1]
		}
		if c.Flags().Changed("gpu") {
			req.GPU = &gpu
		}
		m, err := web.Call[app.AlertMute](ctx, cl, http.MethodPost, "/api/v1/alerts/mute", req)
		if err != nil {
			return "", err
		}
		what := m.Rule
		if m.GPU != nil {
			what += fmt.Sprintf(" on GPU %d", *m.GPU)
		}
		if m.Until.IsZero() {
			return "unmuted " + what, nil
		}
		return fmt.Sprintf("muted %s until %s", what, m.Until.Local().Format("2006-01-02 15:04")), nil
	})
	c.Flags().StringVar(&forS, "for", "1h", "how long, e.g. 30m, 8h, 2d; 0 unmutes")
	c.Flags().IntVar(&gpu, "gpu", 0, "only this GPU's alerts (with MACHINE RULE)")
	return c
}

func alertsMutesCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "mutes [MACHINE] [--json]",
		Short: "List the mutes in force on a machine (this one by default), who asked for each, and its pinned rules",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			node := ""
			if len(args) == 1 {
				node = args[0]
			}
			ms, err := c.AlertMutes(cmd.Context(), node)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), ms)
			}
			return writeMutes(cmd.OutOrStdout(), ms)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// writeMutes prints a machine's mutes, each with its author, and its pins.
func writeMutes(w io.Writer, ms app.AlertMutes) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tGPU\tUNTIL\tBY")
	for _, m := range ms.Mutes {
		gpu := "all"
		if m.GPU != nil {
			gpu = strconv.Itoa(*m.GPU)
		}
		by := m.ByName
		if by == "" {
			by = "(not recorded)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", field(m.Rule), gpu, m.Until.Local().Format("2006-01-02 15:04"), field(by))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	pinned := "none"
	if len(ms.Pinned) > 0 {
		pinned = field(strings.Join(ms.Pinned, ", "))
	}
	_, err := fmt.Fprintf(w, "pinned on %s (muted by its owner only): %s\n", field(nodeLabel(ms)), pinned)
	return err
}

// nodeLabel names the machine of ms: its name, else its device ID.
func nodeLabel(ms app.AlertMutes) string {
	if ms.NodeName != "" {
		return ms.NodeName
	}
	return ms.Node
}

// alertsPinCmd is "alerts pin" (on) or "alerts unpin".
func alertsPinCmd(g *globals, on bool) *cobra.Command {
	var node string
	c := &cobra.Command{
		Use:   "pin RULE [--node MACHINE]",
		Short: "Pin a rule on this machine (its owner only): others' mutes of it end, and no one else mutes it here",
		Args:  cobra.ExactArgs(1),
	}
	if !on {
		c.Use, c.Short = "unpin RULE [--node MACHINE]", "Unpin a rule on this machine (its owner only): members may mute it again"
	}
	actVerb(g, c, func(ctx context.Context, cl *web.Client, args []string) (string, error) {
		pins, err := cl.PinAlert(ctx, app.PinRequest{Rule: args[0], Node: node, Pinned: on})
		if err != nil {
			return "", err
		}
		verb := "pinned "
		if !on {
			verb = "unpinned "
		}
		now := "none"
		if len(pins) > 0 {
			now = strings.Join(pins, ", ")
		}
		return verb + args[0] + "; pinned now: " + now, nil
	})
	c.Flags().StringVar(&node, "node", "", "the machine (this one; a rule is pinned by the machine's own user only)")
	return c
}

func alertsWebhookCmd(g *globals) *cobra.Command {
	var clear bool
	c := &cobra.Command{
		Use:   "webhook [URL] [--clear]",
		Short: "Show or set the pool's alert webhook (owners and admins): their machines hold it and POST every machine's alerts there as JSON",
		Args:  cobra.MaximumNArgs(1),
	}
	actVerb(g, c, func(ctx context.Context, cl *web.Client, args []string) (string, error) {
		if len(args) == 0 && !clear {
			wh, err := web.Call[app.AlertWebhook](ctx, cl, http.MethodGet, "/api/v1/alerts/webhook", nil)
			switch {
			case err != nil || !wh.Set:
				return "no webhook is set", err
			case wh.URL == "":
				return "a webhook is set (its URL is shown on owners' and admins' devices only)", nil
			}
			return wh.URL, nil
		}
		req := app.WebhookRequest{}
		if len(args) == 1 {
			if clear {
				return "", usageError{fmt.Errorf("a URL or --clear: not both")}
			}
			req.URL = args[0]
		}
		a, err := web.Call[app.Applied](ctx, cl, http.MethodPut, "/api/v1/alerts/webhook", req)
		if err != nil {
			return "", err
		}
		if req.URL == "" {
			return "webhook removed" + appliedNote(a), nil
		}
		return "webhook set" + appliedNote(a), nil
	})
	c.Flags().BoolVar(&clear, "clear", false, "remove the webhook")
	return c
}

// alertSpan reads a duration: Go's (90s, 2m, 1h30m) or a number of days
// (7d, 1.5d).
func alertSpan(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		f, err := strconv.ParseFloat(d, 64)
		if err != nil || f < 0 {
			return 0, fmt.Errorf("%q: a number of days, e.g. 7d", s)
		}
		return time.Duration(f * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: a duration, e.g. 90s, 30m, 2h, 7d", s)
	}
	return d, nil
}
