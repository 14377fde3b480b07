package cli

import (
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryVerbHasJSON: every verb that prints a result takes --json; the
// ones without print a stream or a terminal view, or start a process.
func TestEveryVerbHasJSON(t *testing.T) {
	without := map[string]string{
		"labpool agent":      "runs the daemon",
		"labpool web":        "serves the UI",
		"labpool logs":       "prints the job's own output",
		"labpool watch":      "a live terminal view (--json on gpus and nodes)",
		"labpool completion": "prints a shell script",
		"labpool help":       "prints help",
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() {
			for _, sub := range c.Commands() {
				walk(sub)
			}
			return
		}
		path := c.CommandPath()
		for p := c; p != nil; p = p.Parent() {
			if _, ok := without[p.CommandPath()]; ok {
				return
			}
		}
		if c.Flags().Lookup("json") == nil {
			t.Errorf("%s has no --json", path)
		}
	}
	root := newRoot(Hooks{})
	root.InitDefaultCompletionCmd()
	walk(root)
}
