package cli

import (
	"bytes"
	"context"
	"io"
	"strings"

	"fmt"
	"github.com/labpool/labpool/app/web"
	"text/tabwriter"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/spf13/cobra"
)

func poolCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "pool", Short: "Create, join and edit the pool"}
	c.AddCommand(poolCreateCmd(g), poolJoinCmd(g), poolMembersCmd(g), poolRemoveCmd(g), poolReadmitCmd(g),
		poolInviteCmd(g), poolInvitesCmd(g), poolRevokeCmd(g), poolRoleCmd(g), poolAddDeviceCmd(g), poolMergeCmd(g))
	return c
}

// asFlag adds --as NAME, the person a machine is a device of.
func asFlag(c *cobra.Command, as *string) {
	c.Flags().StringVar(as, "as", "", "your name in the pool, the person this machine is a device of (default: your OS user name)")
}

// personAs is the person's name to send: as given, else the OS user's.
func personAs(as string) string {
	if as != "" {
		return as
	}
	return app.OSUserName()
}

func poolCreateCmd(g *globals) *cobra.Command {
	var (
		asJSON *bool
		as     string
	)
	c := &cobra.Command{
		Use:   "create [--as NAME]",
		Short: "Create a pool with you (--as NAME) as its owner and this machine your first device, and print its first invite code",
		Long: "Create a pool with you as its owner, named NAME (your OS user name by default), and this\n" +
			"machine as your first device. It prints the pool's first invite code for other people's\n" +
			"machines (its role, how many machines it admits, until when). To drive the pool from your\n" +
			"laptop too, run `labpool pool add-device` here and the join command it prints there: the\n" +
			"laptop is then an owner as well.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			code, err := c.CreatePool(cmd.Context(), app.CreateRequest{As: personAs(as)})
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), *asJSON, code, func(out io.Writer) {
				you := "you"
				if code.Person != "" {
					you += " (" + code.Person + ")"
				}
				fmt.Fprintf(out, "Pool %s is ready, with %s as its owner on this machine. `labpool pool add-device` adds another device of yours (your laptop), an owner as well.\n", code.PoolID, you)
				fmt.Fprintf(out, "Its invite %s (`labpool pool invite` makes a code of another role or number). On another person's machine of this LAN, run:\n",
					inviteTerms(code.Invite))
				fmt.Fprintf(out, "  labpool pool join %s\n", code.Code)
				fmt.Fprintln(out, "Join code:")
				fmt.Fprintln(out, code.Code)
			})
		},
	}
	asJSON = jsonFlag(c)
	asFlag(c, &as)
	return c
}

func poolJoinCmd(g *globals) *cobra.Command {
	var (
		asJSON *bool
		as     string
	)
	c := &cobra.Command{
		Use:   "join CODE [HOST:PORT] [--as NAME]",
		Short: "Join the pool of CODE, found by mDNS or at HOST:PORT, as the person NAME (a code of `pool add-device`: as that person's device)",
		Long: "Join the pool of CODE, found by mDNS on this LAN or at HOST:PORT. An invite code of\n" +
			"`labpool pool invite` makes you a person of the pool, named NAME (your OS user name by\n" +
			"default), with the code's role. A code of `labpool pool add-device` makes this machine\n" +
			"a device of the person it was made for, with their name and role at once (--as is not used).",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			req := app.JoinRequest{Code: args[0], As: personAs(as)}
			if len(args) == 2 {
				req.Addr = args[1]
			}
			ps, err := c.JoinPool(cmd.Context(), req)
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), *asJSON, ps, func(w io.Writer) { writeJoined(w, ps) })
		},
	}
	asJSON = jsonFlag(c)
	asFlag(c, &as)
	return c
}

// writeJoined says whose device this machine is now, with what role, and
// how many people and devices the pool has.
func writeJoined(w io.Writer, ps app.PoolStatus) {
	persons, devices := 0, 0
	me := app.Person{}
	all := people(ps)
	for _, p := range all {
		if p.Active {
			persons++
			devices += len(p.Devices)
		}
		if p.Self {
			me = p
		}
	}
	as := me.Name
	if me.Role != "" {
		as += " (" + me.Role + ")"
	}
	fmt.Fprintf(w, "Joined pool %s as a device of %s: %s, %s.\n", ps.PoolID, as,
		plural(persons, "person", "people"), count(devices, "device"))
	writeNamesake(w, me, all)
}

// writeNamesake says how to make me one with another person of the same
// name, when an invite made me a person of my own: this machine may be
// another device of theirs, which `pool add-device` would have added.
func writeNamesake(w io.Writer, me app.Person, all []app.Person) {
	if len(me.Devices) != 1 {
		return
	}
	for _, p := range all {
		if p.Active && p.ID != me.ID && strings.EqualFold(p.Name, me.Name) && len(p.Devices) > 0 {
			fmt.Fprintf(w, "Another person is named %s too. If this machine is theirs, an owner makes them one person: `labpool pool merge %s %s` (next time, `labpool pool add-device` on their machine makes a code that adds it to them).\n",
				me.Name, me.Devices[0].ID, p.Devices[0].ID)
			return
		}
	}
}

func poolMembersCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "members", Short: "List the people of the pool, with their roles, and their devices under them"}
	return listVerb(g, c, reader.Pool, writeMembers)
}

func writeMembers(w io.Writer, ps app.PoolStatus) error {
	if ps.PoolID == "" {
		fmt.Fprintln(w, "This machine is not in a pool: run `labpool pool create` or `labpool pool join CODE`.")
		return nil
	}
	if r := ps.Removed; r != nil {
		fmt.Fprintf(w, "This machine was removed from the pool by %s at %s: its members refuse it, and it shows none of their machines. An owner or admin of the pool can take it back with `labpool pool readmit NAME` on their machine; or join another pool with `labpool pool join CODE`, or make one with `labpool pool create`.\n",
			r.ByName, r.At.Local().Format(time.DateTime))
	}
	added := map[string]time.Time{}
	for _, m := range ps.Members {
		added[m.ID] = m.AddedAt
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "pool %s\nNAME\tROLE\tSTATE\tID\tADDED\n", ps.PoolID)
	for _, p := range people(ps) {
		name := p.Name
		if !p.Active {
			name += " (removed)"
		}
		fmt.Fprintf(tw, "%s\t%s\t\t\t\n", name, p.Role)
		for _, d := range p.Devices {
			state := "offline"
			switch {
			case d.Self:
				state = "this machine"
			case d.Online:
				state = "online"
			}
			fmt.Fprintf(tw, "  %s\t\t%s\t%s\t%s\n", d.Name, state, d.ID, added[d.ID].Local().Format(time.DateTime))
		}
		for _, d := range p.Removed {
			fmt.Fprintf(tw, "  %s (removed)\t\t\t%s\t%s\n", d.Name, d.ID, added[d.ID].Local().Format(time.DateTime))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(table.String()) { // a person's line has no device's columns
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
	return nil
}

// people are the pool's people; a daemon of before sent none, and then
// each device is a person of its own.
func people(ps app.PoolStatus) []app.Person {
	if len(ps.People) == 0 {
		return app.PeopleOf(ps.Members)
	}
	return ps.People
}

func poolReadmitCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "readmit NAME|DEVICE",
		Short: "Take back a person or a device removed from the pool, with role, name and history: a person's name readmits all their devices, a device's name one (admins and owners)",
		Long: "Take back a person or a device removed from the pool, with its role, name and history: its\n" +
			"machines learn of it on their own. A person's name readmits all of their removed devices;\n" +
			"a device's name or ID readmits that device alone. Owners and admins readmit (an admin,\n" +
			"members and viewers).",
		Args: cobra.ExactArgs(1),
	}
	return actVerb(g, c, func(ctx context.Context, c *web.Client, args []string) (string, error) {
		return fmt.Sprintf("Readmitted %s to the pool.", args[0]), c.ReadmitMember(ctx, args[0])
	})
}

func poolRemoveCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "remove NAME|DEVICE",
		Short: "Remove a person or a device from the pool: a person's name removes all their devices, a device's name one; refused everywhere at once (admins and owners)",
		Long: "Remove a person or a device from the pool: refused everywhere at once, its jobs stopped,\n" +
			"its invites revoked. A person's name removes the person with all of their devices; a\n" +
			"device's name or ID removes that device alone. `labpool pool readmit` takes either back.",
		Args: cobra.ExactArgs(1),
	}
	return actVerb(g, c, func(ctx context.Context, c *web.Client, args []string) (string, error) {
		return fmt.Sprintf("Removed %s from the pool.", args[0]), c.RemoveMember(ctx, args[0])
	})
}
