package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// quitCmd stops the daemon of the data directory: the window leaves it
// running in the background so that copies, tunnels and this machine's
// place in the pool outlive the window.
func quitCmd(g *globals) *cobra.Command {
	var asJSON *bool
	c := &cobra.Command{
		Use:   "quit",
		Short: "Stop this machine's labpool daemon (copies running here stop; they resume when copied again)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := connect(cmd.Context(), g)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(filepath.Join(g.dataDir, "daemon.lock"))
			if err != nil {
				return fmt.Errorf("find the daemon's process: %w", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil || pid <= 0 {
				return fmt.Errorf("find the daemon's process: bad daemon.lock %q", data)
			}
			p, err := os.FindProcess(pid)
			if err == nil {
				err = p.Signal(syscall.SIGTERM)
			}
			if err != nil {
				return fmt.Errorf("stop the daemon (pid %d): %w", pid, err)
			}
			deadline := time.Now().Add(15 * time.Second)
			for time.Now().Before(deadline) {
				ctx, cancel := context.WithTimeout(cmd.Context(), time.Second)
				err := c.Ping(ctx)
				cancel()
				if err != nil {
					said := fmt.Sprintf("labpool daemon stopped (pid %d)", pid)
					return emit(cmd.OutOrStdout(), *asJSON, actDone{said}, func(w io.Writer) { fmt.Fprintln(w, said) })
				}
				time.Sleep(100 * time.Millisecond)
			}
			return fmt.Errorf("the daemon (pid %d) still answers 15 s after being asked to stop", pid)
		},
	}
	asJSON = jsonFlag(c)
	return c
}
