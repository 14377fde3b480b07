package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
	"github.com/spf13/cobra"
)

func poolAddDeviceCmd(g *globals) *cobra.Command {
	var (
		asJSON *bool
		person string
	)
	c := &cobra.Command{
		Use:   "add-device [--for PERSON]",
		Short: "Make a code that adds one device (your laptop) to you, or to PERSON: it joins with the person's name and role",
		Long: "Make a code that adds one device to a person: you by default, or --for PERSON. It prints\n" +
			"the command to run on the new device; the code admits one device within an hour. The device\n" +
			"joins with the person's name and role at once: the pool's creator adds their laptop and\n" +
			"drives the pool from it as an owner. A person adds their own devices; admins and owners\n" +
			"add those of the people they may manage.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			dc, err := c.AddDevice(cmd.Context(), app.AddDeviceRequest{For: person})
			if err != nil {
				return err
			}
			return emit(cmd.OutOrStdout(), *asJSON, dc, func(w io.Writer) { writeDeviceCode(w, dc) })
		},
	}
	c.Flags().StringVar(&person, "for", "", "the person the device is for (default: you, this machine's person)")
	asJSON = jsonFlag(c)
	return c
}

// writeDeviceCode says whose device the code adds, with what role, for
// how long, and the command to run on the device; the code is the last
// line.
func writeDeviceCode(w io.Writer, dc app.DeviceCode) {
	join := "labpool pool join " + dc.Code
	if len(dc.Addresses) > 0 {
		join += " " + dc.Addresses[0]
	}
	fmt.Fprintf(w, "Code %s adds one device to %s, as %s, until %s (single use). On the new device, run:\n",
		dc.Invite.ID, dc.Person, dc.Invite.Role, dc.Invite.Expires.Local().Format(time.DateTime))
	fmt.Fprintf(w, "  %s\n", join)
	if len(dc.Addresses) > 1 {
		fmt.Fprintf(w, "(this machine is also at %s)\n", strings.Join(dc.Addresses[1:], ", "))
	}
	fmt.Fprintln(w, "Join code:")
	fmt.Fprintln(w, dc.Code)
}

func poolMergeCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "merge WHO INTO",
		Short: "Make person WHO one with person INTO: WHO's devices become INTO's, with INTO's name and role (owners)",
		Long: "Make person WHO one with person INTO (each a person's name, or the name or ID of a\n" +
			"device of theirs): WHO's devices become INTO's, with INTO's name and role. In a pool\n" +
			"from before people, each device is a person of its own: merge a person's devices into\n" +
			"one. Owners merge.",
		Args: cobra.ExactArgs(2),
	}
	return actVerb(g, c, func(ctx context.Context, c *web.Client, args []string) (string, error) {
		return fmt.Sprintf("Merged %s into %s: its devices are %s's now, with that name and role.", args[0], args[1], args[1]), c.MergePeople(ctx, args[0], args[1])
	})
}
