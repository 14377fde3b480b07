package cli

import (
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/app/web"
)

// versions are both ends' builds: this CLI's and its daemon's (nil when
// none is running).
type versions struct {
	CLI    app.Version  `json:"cli"`
	Daemon *app.Version `json:"daemon"`
}

// versionCmd reports the CLI's build and that of the daemon it talks to.
func versionCmd(g *globals, hooks Hooks) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version",
		Short: "Show the version of this labpool and of its running daemon",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versions{CLI: app.Version{Version: hooks.Version, APIVersion: app.APIVersion}}
			if c, err := connect(cmd.Context(), g); err == nil {
				d, err := web.Call[app.Version](cmd.Context(), c, http.MethodGet, "/api/v1/version", nil)
				if err != nil {
					return fmt.Errorf("ask the daemon its version: %w", err)
				}
				v.Daemon = &d
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), v)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "labpool %s (api %d)\n", v.CLI.Version, v.CLI.APIVersion)
			if v.Daemon == nil {
				fmt.Fprintln(cmd.OutOrStdout(), "daemon: not running")
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "daemon %s (api %d)\n", v.Daemon.Version, v.Daemon.APIVersion)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
