package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/labpool/labpool/app/web"
	"github.com/spf13/cobra"
)

// listVerb makes c a listing: it reads from the daemon (or, with none
// running, the replica, after a note that it may be stale) and prints what
// get returns as JSON with --json, as table writes it otherwise.
func listVerb[T any](g *globals, c *cobra.Command, get func(reader, context.Context) (T, error), table func(io.Writer, T) error) *cobra.Command {
	var asJSON bool
	c.Args = cobra.NoArgs
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		r, done, err := open(cmd.Context(), g, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		defer done()
		v, err := get(r, cmd.Context())
		if err != nil {
			return err
		}
		if asJSON {
			return printJSON(cmd.OutOrStdout(), v)
		}
		return table(cmd.OutOrStdout(), v)
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// actVerb makes c a verb that asks the running daemon for one change and
// prints the line do returns to say what it did ({"done": line} with --json).
func actVerb(g *globals, c *cobra.Command, do func(ctx context.Context, c *web.Client, args []string) (string, error)) *cobra.Command {
	asJSON := jsonFlag(c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		client, err := connect(cmd.Context(), g)
		if err != nil {
			return err
		}
		said, err := do(cmd.Context(), client, args)
		if err != nil {
			return err
		}
		return emit(cmd.OutOrStdout(), *asJSON, actDone{said}, func(w io.Writer) { fmt.Fprintln(w, said) })
	}
	return c
}
