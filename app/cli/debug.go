package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func debugCmd(g *globals) *cobra.Command {
	var asJSON bool
	probe := &cobra.Command{
		Use:   "probe HOST:PORT",
		Short: "Show which device answers at HOST:PORT and whether it serves this machine",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			res, err := c.Probe(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is device %s: %s\n", res.Addr, res.ID, res.Message)
			return nil
		},
	}
	probe.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c := &cobra.Command{Use: "debug", Short: "Diagnostics"}
	c.AddCommand(probe)
	return c
}
