package cli

import (
	"io"

	"github.com/spf13/cobra"
)

// jsonFlag gives c the --json flag every verb that prints a result has.
func jsonFlag(c *cobra.Command) *bool {
	asJSON := new(bool)
	c.Flags().BoolVar(asJSON, "json", false, "print the result as JSON (IDs in full)")
	return asJSON
}

// emit prints v as JSON when asJSON, and otherwise what text writes: a
// person reads names, a script reads IDs.
func emit(w io.Writer, asJSON bool, v any, text func(io.Writer)) error {
	if asJSON {
		return printJSON(w, v)
	}
	text(w)
	return nil
}

// actDone is the JSON of a verb whose result is only what it did.
type actDone struct {
	Done string `json:"done"`
}
