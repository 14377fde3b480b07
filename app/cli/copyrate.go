package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// rateHold is how long a copy's bar watches it before it says a rate: a
// rate from the first moments (the bytes copied before the bar first
// polled, over the microseconds since) said "24 TB/s".
const rateHold = time.Second

// copyBar is cp's progress bar: how much of the copy is done, in binary
// units as the rest of the output, and its rate and time left measured
// since the bar first saw it, said once rateHold has passed.
type copyBar struct {
	bar   *progressbar.ProgressBar
	since time.Time // when the bar first saw the copy
	from  int64     // the bytes done then
}

// newCopyBar is a bar on w for a copy of total bytes. It draws at each
// set, as often as the daemon answers (every 250 ms at most).
func newCopyBar(w io.Writer, total int64) *copyBar {
	return &copyBar{bar: progressbar.NewOptions64(total, progressbar.OptionSetWriter(w),
		progressbar.OptionShowDescriptionAtLineEnd(), progressbar.OptionSetPredictTime(false))}
}

// set shows done bytes of the copy at at.
func (b *copyBar) set(done int64, at time.Time) {
	if b.since.IsZero() {
		b.since, b.from = at, done
	}
	b.bar.Describe(copyText(done, b.bar.GetMax64(), b.from, at.Sub(b.since)))
	b.bar.Set64(done)
	b.bar.RenderBlank() // the text changes where the percentage does not
}

// finish fills the bar and ends its line.
func (b *copyBar) finish(w io.Writer) {
	b.bar.Finish()
	fmt.Fprintln(w)
}

// copyText is what cp's bar says after it watched a copy of total bytes
// for elapsed, from done0 bytes done to done: "1.2 GiB of 2.6 GiB", then
// ", 110.0 MiB/s, 13s left" once it watched it rateHold.
func copyText(done, total, done0 int64, elapsed time.Duration) string {
	s := fmt.Sprintf("%s of %s", Bytes(uint64(max(0, done))), Bytes(uint64(max(0, total))))
	if elapsed < rateHold {
		return s
	}
	rate := float64(done-done0) / elapsed.Seconds()
	if rate <= 0 {
		return s + ", stalled"
	}
	s += ", " + Bytes(uint64(rate)) + "/s"
	if left := total - done; left > 0 {
		s += ", " + time.Duration(float64(left)/rate*float64(time.Second)).Round(time.Second).String() + " left"
	}
	return s
}
