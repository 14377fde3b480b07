package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/spf13/cobra"
)

func poolInviteCmd(g *globals) *cobra.Command {
	var (
		role    string
		uses    int
		expires time.Duration
	)
	c := &cobra.Command{
		Use:   "invite",
		Short: "Make a join code for another machine (admins and owners; the code is the last line)",
		Long: "Make a join code for another machine. The code grants ROLE (member by default; viewer\n" +
			"watches only; admin manages members, and only an owner may invite one), works for N joins\n" +
			"(unlimited by default) until it expires (24 h by default), and can be ended early with\n" +
			"`labpool pool revoke`. The code is printed as the last line.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if uses < 0 || expires < 0 {
				return usageError{fmt.Errorf("--uses and --expires must not be negative")}
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
			left := "unlimited uses"
			if ni.Invite.Uses > 0 {
				left = fmt.Sprintf("%d uses", ni.Invite.Uses)
			}
			fmt.Fprintf(out, "Invite %s: role %s, %s, expires %s. On the other machine, run:\n",
				ni.Invite.ID, ni.Invite.Role, left, ni.Invite.Expires.Local().Format(time.DateTime))
			fmt.Fprintf(out, "  labpool pool join %s\n", ni.Code)
			fmt.Fprintln(out, "Join code:")
			fmt.Fprintln(out, ni.Code)
			return nil
		},
	}
	c.Flags().StringVar(&role, "role", "member", "role the code grants: member, viewer or admin")
	c.Flags().IntVar(&uses, "uses", 0, "how many machines may join with it (0: unlimited)")
	c.Flags().DurationVar(&expires, "expires", 24*time.Hour, "how long the code works, e.g. 1h, 72h")
	return c
}

func poolInvitesCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "invites",
		Short: "List the pool's invites: role, uses left, expiry, state (admins and owners)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, done, err := open(cmd.Context(), g, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer done()
			ps, err := r.Pool(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), ps.Invites)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "INVITE\tROLE\tUSES LEFT\tEXPIRES\tSTATE")
			for _, inv := range ps.Invites {
				left := "unlimited"
				if inv.UsesLeft >= 0 {
					left = fmt.Sprint(inv.UsesLeft)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", inv.ID, inv.Role, left, inv.Expires.Local().Format(time.DateTime), inv.State)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func poolRevokeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke INVITE",
		Short: "End an invite: its code is refused from now on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			if err := c.RevokeInvite(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Revoked invite %s.\n", args[0])
			return nil
		},
	}
}

func poolRoleCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "role ID ROLE",
		Short: "Change a member's role: owner, admin, member or viewer (admins: members and viewers; owners: anyone but the creator)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			if err := c.SetRole(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is now %s.\n", args[0], args[1])
			return nil
		},
	}
}
