package cli

import (
	"context"
	"io"

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
		poolInviteCmd(g), poolInvitesCmd(g), poolRevokeCmd(g), poolRoleCmd(g))
	return c
}

func poolCreateCmd(g *globals) *cobra.Command {
	var asJSON *bool
	c := &cobra.Command{
		Use:   "create",
		Short: "Create a pool with this machine as its owner and print its first invite code: its role, how many machines it admits, until when",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			code, err := c.CreatePool(cmd.Context())
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), *asJSON, code, func(out io.Writer) {
				fmt.Fprintf(out, "Pool %s is ready. Its invite %s (`labpool pool invite` makes a code of another role or number). On another machine of this LAN, run:\n",
					code.PoolID, inviteTerms(code.Invite))
				fmt.Fprintf(out, "  labpool pool join %s\n", code.Code)
				fmt.Fprintln(out, "Join code:")
				fmt.Fprintln(out, code.Code)
			})
		},
	}
	asJSON = jsonFlag(c)
	return c
}

func poolJoinCmd(g *globals) *cobra.Command {
	var asJSON *bool
	c := &cobra.Command{
		Use:   "join CODE [HOST:PORT]",
		Short: "Join the pool of CODE, found by mDNS or at HOST:PORT",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			req := app.JoinRequest{Code: args[0]}
			if len(args) == 2 {
				req.Addr = args[1]
			}
			ps, err := c.JoinPool(cmd.Context(), req)
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), *asJSON, ps, func(w io.Writer) {
				fmt.Fprintf(w, "Joined pool %s (%d members).\n", ps.PoolID, countMembers(ps))
			})
		},
	}
	asJSON = jsonFlag(c)
	return c
}

func countMembers(ps app.PoolStatus) int {
	n := 0
	for _, m := range ps.Members {
		if !m.Removed {
			n++
		}
	}
	return n
}

func poolMembersCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "members", Short: "List the devices admitted to the pool, with their roles"}
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
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "pool %s\nID\tNAME\tROLE\tADDED\tSTATE\n", ps.PoolID)
	for _, m := range ps.Members {
		state := "offline"
		switch {
		case m.Removed:
			state = "removed"
		case m.Self:
			state = "this machine"
		case m.Online:
			state = "online"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", m.ID, m.Name, m.Role, m.AddedAt.Local().Format(time.DateTime), state)
	}
	return tw.Flush()
}

func poolReadmitCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "readmit NAME",
		Short: "Take back a device removed from the pool, with its role, name and history: its machine learns of it on its own (admins and owners)",
		Args:  cobra.ExactArgs(1),
	}
	return actVerb(g, c, func(ctx context.Context, c *web.Client, args []string) (string, error) {
		return fmt.Sprintf("Readmitted %s to the pool.", args[0]), c.ReadmitMember(ctx, args[0])
	})
}

func poolRemoveCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "remove ID",
		Short: "Remove a device from the pool: refused everywhere at once, its jobs stopped, its invite revoked (admins and owners)",
		Args:  cobra.ExactArgs(1),
	}
	return actVerb(g, c, func(ctx context.Context, c *web.Client, args []string) (string, error) {
		return fmt.Sprintf("Removed %s from the pool.", args[0]), c.RemoveMember(ctx, args[0])
	})
}
