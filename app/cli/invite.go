package cli

import (
	"context"
	"io"

	"fmt"
	"github.com/labpool/labpool/app/web"
	"text/tabwriter"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/sync/pool"
	"github.com/spf13/cobra"
)

// machines says how many machines an invite admits: "1 machine", "3
// machines", or, for an invite of an older version, "any number of machines".
func machines(uses int) string {
	switch uses {
	case 0:
		return "any number of machines"
	case 1:
		return "1 machine"
	}
	return fmt.Sprintf("%d machines", uses)
}

// inviteTerms says what an invite, as the daemon made it, allows: "0123abcd
// admits 16 machines, as member, until 2025-01-02 15:04:05".
func inviteTerms(inv app.Invite) string {
	return fmt.Sprintf("%s admits %s, as %s, until %s", inv.ID, machines(inv.Uses), inv.Role, inv.Expires.Local().Format(time.DateTime))
}

func poolInviteCmd(g *globals) *cobra.Command {
	var (
		role    string
		uses    int
		expires time.Duration
		asJSON  *bool
	)
	c := &cobra.Command{
		Use:   "invite",
		Short: "Make a join code for another machine (admins and owners; the code is the last line)",
		Long: "Make a join code for another machine. The code grants ROLE (member by default; viewer\n" +
			"watches only; admin manages members, and only an owner may invite one), admits N machines\n" +
			"(one by default, at most " + fmt.Sprint(pool.MaxInviteUses) + ") until it expires (24 h by default), and can be ended\n" +
			"early with `labpool pool revoke`. The code is printed as the last line.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if uses < 1 || uses > pool.MaxInviteUses || expires < 0 {
				return usageError{fmt.Errorf("--uses must be 1 to %d and --expires not negative", pool.MaxInviteUses)}
			}
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			ni, err := c.CreateInvite(cmd.Context(), app.InviteRequest{Role: role, Uses: uses, ExpiresSeconds: int64(expires / time.Second)})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if *asJSON {
				return printJSON(out, ni)
			}
			fmt.Fprintf(out, "Invite %s. On the other machine, run:\n", inviteTerms(ni.Invite))
			fmt.Fprintf(out, "  labpool pool join %s\n", ni.Code)
			fmt.Fprintln(out, "Join code:")
			fmt.Fprintln(out, ni.Code)
			return nil
		},
	}
	c.Flags().StringVar(&role, "role", "member", "role the code grants: member, viewer or admin")
	c.Flags().IntVar(&uses, "uses", 1, fmt.Sprintf("how many machines may join with it (1 to %d)", pool.MaxInviteUses))
	c.Flags().DurationVar(&expires, "expires", 24*time.Hour, "how long the code works, e.g. 1h, 72h")
	asJSON = jsonFlag(c)
	return c
}

func poolInvitesCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "invites", Short: "List the pool's invites: role, uses left, expiry, state (admins and owners)"}
	invites := func(r reader, ctx context.Context) ([]app.Invite, error) {
		ps, err := r.Pool(ctx)
		return ps.Invites, err
	}
	return listVerb(g, c, invites, writeInvites)
}

func writeInvites(w io.Writer, invites []app.Invite) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INVITE\tROLE\tUSES LEFT\tEXPIRES\tSTATE")
	for _, inv := range invites {
		left := "unlimited"
		switch {
		case inv.Uses > 0 && inv.Used > inv.Uses:
			// Members admitted at once on different machines: every one
			// of them is in, and the log says so.
			left = fmt.Sprintf("0 (%d used of %d: concurrent admissions)", inv.Used, inv.Uses)
		case inv.UsesLeft >= 0:
			left = fmt.Sprint(inv.UsesLeft)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", inv.ID, inv.Role, left, inv.Expires.Local().Format(time.DateTime), inv.State)
	}
	return tw.Flush()
}

func poolRevokeCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "revoke INVITE", Short: "End an invite: its code is refused from now on", Args: cobra.ExactArgs(1)}
	return actVerb(g, c, func(ctx context.Context, c *web.Client, args []string) (string, error) {
		return fmt.Sprintf("Revoked invite %s.", args[0]), c.RevokeInvite(ctx, args[0])
	})
}

func poolRoleCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "role NAME|DEVICE ROLE",
		Short: "Change a person's role: owner, admin, member or viewer, on all their devices (admins: members and viewers; owners: anyone but the creator)",
		Long: "Change a person's role: owner, admin, member or viewer. A role is a person's, on every\n" +
			"device of theirs: a person's name, or the name or ID of any device of theirs, changes it\n" +
			"for all of them. Admins change members and viewers; owners anyone but the creator.",
		Args: cobra.ExactArgs(2),
	}
	return actVerb(g, c, func(ctx context.Context, c *web.Client, args []string) (string, error) {
		return fmt.Sprintf("%s is now %s.", args[0], args[1]), c.SetRole(ctx, args[0], args[1])
	})
}
