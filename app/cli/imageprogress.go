package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/labpool/labpool/app"
	"github.com/labpool/labpool/node/containers"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

// loadBars shows what a machine reports while it loads or pulls an image:
// first the archive's transfer (the bytes the machine has received, not
// what left here), then the engine's own progress, one bar per step it
// names ("Loading layer 5f70bf18"), and its other status lines as text.
type loadBars struct {
	w     io.Writer
	name  string
	size  int64 // the archive's bytes; 0 for a pull
	sent  *progressbar.ProgressBar
	step  *progressbar.ProgressBar
	which string // the step's status
	said  bool   // the transfer's end was said
}

func newLoadBars(w io.Writer, name string, size int64) *loadBars {
	return &loadBars{w: w, name: name, size: size}
}

func (b *loadBars) bar(total int64, what string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total, progressbar.OptionSetWriter(b.w), progressbar.OptionShowBytes(true),
		progressbar.OptionUseIECUnits(true), progressbar.OptionSetDescription(what), progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(b.w) }))
}

// show takes one progress line.
func (b *loadBars) show(p app.ImageProgress) {
	switch {
	case p.Status == "" && p.Total == 0 && b.size > 0: // the transfer, so far
		if b.sent == nil {
			b.sent = b.bar(b.size, "sending "+b.name)
		}
		b.sent.Set64(min(p.Done, b.size))
	case p.Status == containers.StatusReceived:
		b.received(p.Done)
	case p.Total > 0: // a step of the engine's
		b.received(b.size)
		if b.step == nil || b.which != p.Status {
			b.finishStep()
			b.step, b.which = b.bar(p.Total, p.Status), p.Status
		}
		b.step.Set64(min(p.Done, p.Total))
	case p.Status != "":
		b.received(b.size)
		b.finishStep()
		fmt.Fprintln(b.w, p.Status)
	}
}

// received ends the transfer's bar and says the engine has it now.
func (b *loadBars) received(n int64) {
	if b.said || b.size == 0 {
		return
	}
	b.said = true
	if b.sent == nil {
		b.sent = b.bar(b.size, "sending "+b.name)
	}
	b.sent.Set64(min(n, b.size))
	b.sent.Finish()
	fmt.Fprintln(b.w, "the machine has the archive; its engine is loading it")
}

func (b *loadBars) finishStep() {
	if b.step != nil {
		b.step.Finish()
		b.step = nil
	}
}

// showProgress reads the NDJSON progress a node streams for a load or a
// pull into bars, and returns the error its last line reports; it prints
// what was loaded (the last line, as JSON with asJSON).
func showProgress(cmd *cobra.Command, asJSON bool, r io.Reader, bars *loadBars) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var last app.ImageProgress
	for sc.Scan() {
		var p app.ImageProgress
		if json.Unmarshal(sc.Bytes(), &p) != nil {
			continue
		}
		last = p
		if p.Error != "" {
			bars.finishStep()
			return errors.New(p.Error)
		}
		if len(p.Tags) == 0 {
			bars.show(p)
		}
	}
	bars.finishStep()
	if err := sc.Err(); err != nil {
		return err
	}
	if len(last.Tags) == 0 {
		return errors.New("the machine ended the stream before it said what it loaded")
	}
	return emit(cmd.OutOrStdout(), asJSON, last, func(w io.Writer) { fmt.Fprintf(w, "Loaded %s\n", strings.Join(last.Tags, ", ")) })
}
